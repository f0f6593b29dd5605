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

/** Rows per second of a run: every row it counted, unchanged ones included (a refresh of unchanged rows still read and compared them). */
export function runRate(start: string | null, end: string | null, created: unknown, updated: unknown, deleted: unknown, unchanged?: unknown): string {
	const ms = runMs(start, end);
	if (ms === null) return "";
	const rows = Number(created ?? 0) + Number(updated ?? 0) + Number(deleted ?? 0) + Number(unchanged ?? 0);
	return number(Math.round(rows / Math.max(ms / 1000, 0.001) * 10) / 10);
}

/** The time zone dates are shown in (the browser's), named in tooltips next to absolute times. */
export function timeZone(): string {
	return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** An absolute time with its time zone: the tooltip of a relative time. */
export function absolute(value: string | null | undefined): string {
	return value ? `${dateTime(value)} (${timeZone()})` : "";
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [["day", 86400000], ["hour", 3600000], ["minute", 60000]];

/** "3 minutes ago", "in 2 hours", "now" (`narrow`: "3 min. ago"); relative to `now` (ms). */
export function relative(value: string | null | undefined, now = Date.now(), style: "long" | "narrow" = "long"): string {
	if (!value) return "";
	const ms = new Date(value).getTime() - now;
	if (!Number.isFinite(ms)) return "";
	const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: "auto", style });
	for (const [unit, size] of UNITS) if (Math.abs(ms) >= size) return rtf.format(Math.trunc(ms / size), unit);
	return rtf.format(0, "second");
}

/** The start of a runs window: `1h`, `6h`, `24h`, `7d` before `now`, or an ISO time (custom); null: no bound. */
export function windowStart(since: string | null | undefined, now = Date.now()): string | null {
	const match = /^(\d+)([hd])$/.exec(since ?? "");
	if (match) return new Date(now - Number(match[1]) * (match[2] === "h" ? 3600000 : 86400000)).toISOString();
	// (a local "yyyy-MM-dd HH:mm" as typed: the T form every browser parses as local time)
	const at = since && /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?$|Z$|[+-]\d{2}:?\d{2}$/.test(since.trim()) ? new Date(since.trim().replace(" ", "T")) : null;
	return at && Number.isFinite(at.getTime()) ? at.toISOString() : null;
}
