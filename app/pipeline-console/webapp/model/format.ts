import DateFormat from "sap/ui/core/format/DateFormat";
import formatMessage from "sap/base/strings/formatMessage";
import { duration } from "../control/HistoryChart";
import { display, number } from "./types";

// Formatters every view uses (dates, durations, rates, messages): pure functions of their values.

export type Text = (key: string, args?: unknown[]) => string;

const dateFormat = DateFormat.getDateTimeInstance({ style: "medium" });
const timeFormat = DateFormat.getTimeInstance({ style: "medium" });

export function dateTime(value: string | null | undefined): string {
	return value ? dateFormat.format(new Date(value)) : "";
}

export function time(value: string): string {
	return timeFormat.format(new Date(value));
}

export function message(pattern: string, args: unknown[]): string {
	return pattern ? formatMessage(pattern, args.map(display)) : "";
}

export function json(value: unknown): string {
	return value === null || value === undefined ? "" : JSON.stringify(value);
}

/** Milliseconds of a run (to now while it runs); null without a start. */
export function runMs(start: string | null, end: string | null): number | null {
	if (!start) return null;
	const ms = (end ? new Date(end).getTime() : Date.now()) - new Date(start).getTime();
	return Number.isFinite(ms) && ms >= 0 ? ms : null;
}

export function runDuration(start: string | null, end: string | null): string {
	const ms = runMs(start, end);
	return ms === null ? "" : duration(ms);
}

/** Rows per second of a run. */
export function runRate(start: string | null, end: string | null, created: unknown, updated: unknown, deleted: unknown): string {
	const ms = runMs(start, end);
	if (ms === null) return "";
	const rows = Number(created ?? 0) + Number(updated ?? 0) + Number(deleted ?? 0);
	return number(Math.round(rows / Math.max(ms / 1000, 0.001) * 10) / 10);
}
