import Filter from "sap/ui/model/Filter";
import FilterOperator from "sap/ui/model/FilterOperator";
import type { TimelineData, TimelineRun } from "../control/RunsTimeline";
import { absolute, dateTime, runDuration, windowStart, type Text } from "./format";

// The runs overview's filter: URL query ⇄ selects ⇄ OData $filter, and the timeline's data.

/** The query of `#/runs?…` (every part optional). */
export interface RunsQuery {
	status?: string;
	trigger?: string;
	pipeline?: string;
	/** `1h` | `6h` | `24h` | `7d` | `all` | an ISO time (custom). */
	since?: string;
}

/** The selects' state (ui>/runsFilter); `custom` is the typed local `yyyy-MM-dd HH:mm:ss`. */
export interface RunsFilter {
	status: string;
	trigger: string;
	pipeline: string;
	window: string;
	custom: string;
	/** false: the typed start is no date and time (not applied). */
	customValid?: boolean;
	pipelines: { key: string; text: string }[];
}

export const WINDOWS = ["1h", "6h", "24h", "7d", "all"];
export const DEFAULT_WINDOW = "24h";
/** The stored run statuses (`idle`: completed), the legend's order. */
export const STATUSES = ["idle", "failed", "running"];

const pad = (n: number) => String(n).padStart(2, "0");
/** A time as the custom field shows it (local). */
const local = (at: Date) => `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;

/** A query value as typed (a hash may keep `%3A` in an ISO time). */
function decoded(value: string | undefined): string | undefined {
	try {
		return value === undefined ? undefined : decodeURIComponent(value);
	} catch {
		return value;
	}
}

export function fromQuery(query: RunsQuery): Omit<RunsFilter, "pipelines"> {
	const since = decoded(query.since) ?? DEFAULT_WINDOW;
	const custom = WINDOWS.includes(since) ? null : windowStart(since);
	return {
		status: query.status ?? "",
		trigger: query.trigger ?? "",
		pipeline: query.pipeline ?? "",
		window: custom ? "custom" : WINDOWS.includes(since) ? since : DEFAULT_WINDOW,
		custom: custom ? local(new Date(custom)) : ""
	};
}

/** The URL query of the selects (empty parts left out; the default window too). */
export function toQuery(filter: Omit<RunsFilter, "pipelines">): RunsQuery {
	const query: RunsQuery = {};
	if (filter.status) query.status = filter.status;
	if (filter.trigger) query.trigger = filter.trigger;
	if (filter.pipeline) query.pipeline = filter.pipeline;
	const since = filter.window === "custom"
		? windowStart(filter.custom || local(new Date(Date.now() - 86400000)))
		: filter.window;
	if (since && since !== DEFAULT_WINDOW) query.since = since;
	return query;
}

/** The window's start as ISO (null: any time). */
export function filterStart(filter: Omit<RunsFilter, "pipelines">, now = Date.now()): string | null {
	if (filter.window === "all") return null;
	return windowStart(filter.window === "custom" ? filter.custom : filter.window, now);
}

/** The server-side filter: status, trigger, pipeline, and runs started in the window or still running. */
export function runFilters(filter: Omit<RunsFilter, "pipelines">): Filter[] {
	const filters: Filter[] = [];
	if (filter.status) filters.push(new Filter("status", FilterOperator.EQ, filter.status));
	if (filter.trigger) filters.push(new Filter("trigger", FilterOperator.EQ, filter.trigger));
	if (filter.pipeline) filters.push(new Filter("pipeline_name", FilterOperator.EQ, filter.pipeline));
	const start = filterStart(filter);
	if (start) filters.push(new Filter({ and: false, filters: [new Filter("startTime", FilterOperator.GE, start), new Filter("status", FilterOperator.EQ, "running")] }));
	return filters;
}

/** The timeline of the runs read: from the window's start (any time: the oldest run) to now. */
export function timelineData(text: Text, filter: Omit<RunsFilter, "pipelines">, rows: Record<string, string | null>[], now: number): TimelineData | null {
	const runs: TimelineRun[] = rows.filter(row => row.startTime && row.ID && row.pipeline_name).map(row => ({
		id: String(row.ID),
		pipeline: String(row.pipeline_name),
		status: String(row.status ?? ""),
		start: String(row.startTime),
		end: row.endTime ?? null,
		label: text("timelineRun", [row.pipeline_name, row.status, absolute(row.startTime), row.endTime ? runDuration(row.startTime, row.endTime) : text("timelineRunning")])
	}));
	if (!runs.length) return { from: new Date(now).toISOString(), to: new Date(now).toISOString(), runs, legend: {}, ticks: ["", "", ""] };
	const oldest = Math.min(...runs.map(run => new Date(run.start).getTime()));
	const from = Math.min(new Date(filterStart(filter, now) ?? oldest).getTime(), oldest);
	const to = Math.max(now, ...runs.map(run => run.end ? new Date(run.end).getTime() : now));
	const legend: Record<string, string> = {};
	for (const status of [...STATUSES, ...runs.map(run => run.status)]) legend[status] = status === "idle" ? text("statusIdle") : status;
	return {
		from: new Date(from).toISOString(),
		to: new Date(to).toISOString(),
		runs,
		legend,
		ticks: [dateTime(new Date(from).toISOString()), dateTime(new Date((from + to) / 2).toISOString()), dateTime(new Date(to).toISOString())]
	};
}
