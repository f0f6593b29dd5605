import formatMessage from "sap/base/strings/formatMessage";
import { number, parseJson } from "./types";

// Formatters for event-driven pipelines, required by the views (core:require), so the list and the
// Events section need nothing of the App controller. `events` is read from the pipeline's coded
// config (baseConfig) and, in the detail, from configView's effective `events`.

/** The `events` setting a config names: true, a messaging service, or { service, topics, … }; false/absent: none. */
function eventsOf(baseConfig: unknown): unknown {
	const config = parseJson<{ events?: unknown }>(baseConfig);
	const events = config?.events;
	return events === undefined || events === null || events === false ? undefined : events;
}

/** The topic names of an `events` setting (strings or { topic }). */
function topicNames(topics: unknown): string[] {
	return Array.isArray(topics) ? topics.map(each => typeof each === "string" ? each : String((each as { topic?: unknown })?.topic ?? "")).filter(Boolean) : [];
}

export default {
	/** Whether the pipeline follows business events (it has `events`). */
	isEventDriven(baseConfig: unknown): boolean {
		return eventsOf(baseConfig) !== undefined;
	},

	/** "Event-driven: messaging service {0}, topics {1}" from the coded config (the list's tooltip). */
	listTooltip(pattern: string, defaultTopics: string, baseConfig: unknown): string {
		const events = eventsOf(baseConfig);
		if (!pattern || events === undefined) return "";
		const object = typeof events === "object" ? events as { service?: unknown; topics?: unknown } : {};
		const service = typeof events === "string" ? events : typeof object.service === "string" ? object.service : "messaging";
		const topics = topicNames(object.topics);
		return formatMessage(pattern, [service, topics.length ? topics.join(", ") : defaultTopics]);
	},

	/** The effective subscription (configView's `events`): service, topics, window and micro-batch. */
	subscription(pattern: string, defaultTopics: string, events: { service?: string; topics?: unknown; window?: number; maxBatch?: number } | null): string {
		if (!pattern || !events) return "";
		const topics = topicNames(events.topics);
		return formatMessage(pattern, [events.service ?? "", topics.length ? topics.join(", ") : defaultTopics, number(events.window), number(events.maxBatch)]);
	}
};
