import Sorter from "sap/ui/model/Sorter";
import Filter from "sap/ui/model/Filter";
import FilterOperator from "sap/ui/model/FilterOperator";
import type ODataModel from "sap/ui/model/odata/v4/ODataModel";
import type ODataListBinding from "sap/ui/model/odata/v4/ODataListBinding";
import type { Lane, TimelineBar } from "../control/RunTimeline";
import { duration } from "../control/HistoryChart";
import { number } from "./types";

// A run's event log (`PipelineRuns(<ID>)/events`) as the run page and the failure banner show it.

/** One row of `PipelineRunEvents` (Integer64 values come as strings). */
export interface RunEvent {
	seq: number;
	time: string;
	kind: string;
	phase: string | null;
	httpStatus: number | null;
	rows: number | string | null;
	bytes: number | string | null;
	durationMs: number | string | null;
	attempt: number | null;
	waitMs: number | string | null;
	message: string | null;
	details: string | null;
}

/** The log's filter (run>/filter): kind and phase ("" for all) and a text searched in message and details. */
export interface EventFilter {
	kind: string;
	phase: string;
	text: string;
}

/** Where a failed run failed and its first error event. */
export interface Failure {
	phase: string;
	message: string;
	seq: number | null;
}

const SELECT = "seq,time,kind,phase,httpStatus,rows,bytes,durationMs,attempt,waitMs,message,details";
/** The server keeps at most `runEvents.max` events per run (default 1,000): one request reads them all. */
const MAX_EVENTS = 5000;

type Text = (key: string, args?: unknown[]) => string;

const path = (runId: string) => `/PipelineRuns(${encodeURIComponent(runId)})/events`;

/** A run's events in order. */
export async function loadEvents(model: ODataModel, runId: string): Promise<RunEvent[]> {
	const binding = model.bindList(path(runId), undefined, new Sorter("seq"), undefined, { $select: SELECT }) as ODataListBinding;
	try {
		return (await binding.requestContexts(0, MAX_EVENTS)).map(c => c.getObject() as RunEvent);
	} finally {
		binding.destroy();
	}
}

/** A failed run's first error event (null when it has none). */
export async function firstError(model: ODataModel, runId: string): Promise<RunEvent | null> {
	const binding = model.bindList(path(runId), undefined, new Sorter("seq"), new Filter("kind", FilterOperator.EQ, "error"), { $select: SELECT }) as ODataListBinding;
	try {
		const [first] = await binding.requestContexts(0, 1);
		return first ? first.getObject() as RunEvent : null;
	} finally {
		binding.destroy();
	}
}

/** The message of a run's `error` JSON (the banner's fallback when the run has no error event). */
export function errorMessage(error: unknown): string {
	if (typeof error !== "string" || !error) return "";
	try {
		const parsed = JSON.parse(error) as { message?: string; code?: string };
		return parsed.message ? parsed.code ? `${parsed.code}: ${parsed.message}` : parsed.message : error;
	} catch {
		return error;
	}
}

/** The banner's failure: the phase (failedAt, else the error event's) and the first error's message. */
export function failureOf(failedAt: string | null | undefined, error: unknown, first: RunEvent | null): Failure {
	return {
		phase: failedAt || first?.phase || "",
		message: first?.message || errorMessage(error),
		seq: first?.seq ?? null
	};
}

/** The banner's text: "The run failed at the source: <message>" (`last`: "The last run failed …", the pipeline detail's). */
export function failureText(text: Text, failure: Failure | null, last = false): string {
	if (!failure) return "";
	const where = failure.phase ? text(`failedAt_${failure.phase}`) : text("failedAt_unknown");
	return failure.message ? text(last ? "lastRunFailed" : "failureBanner", [where, failure.message]) : text(last ? "lastRunFailedNoMessage" : "failureBannerNoMessage", [where]);
}

const LANE_OF: Record<string, Lane> = { source: "read", mapping: "map", target: "write" };

/** The events with a duration as timeline bars: a bar ends at its event's time. */
export function timelineBars(text: Text, events: RunEvent[], runStart: string | null): TimelineBar[] {
	const first = events[0] ? new Date(events[0].time).getTime() : NaN;
	const origin = runStart ? new Date(runStart).getTime() : first;
	return events.flatMap(event => {
		const lane = event.phase ? LANE_OF[event.phase] : undefined;
		const ms = Number(event.durationMs ?? NaN);
		const failed = event.kind === "error";
		if (!lane || (!Number.isFinite(ms) && !failed)) return [];
		const durationMs = Number.isFinite(ms) ? ms : 0;
		const end = new Date(event.time).getTime() - origin;
		return [{ seq: event.seq, lane, startMs: Math.max(0, end - durationMs), durationMs, failed, label: barLabel(text, event, durationMs) }];
	});
}

function barLabel(text: Text, event: RunEvent, ms: number): string {
	const rows = event.rows === null || event.rows === undefined ? "" : number(event.rows);
	if (event.kind === "page") return text("timelinePage", [event.seq, rows, duration(ms), event.httpStatus ?? ""]);
	if (event.kind === "batch") return text("timelineBatch", [event.seq, event.attempt ?? "", rows, duration(ms)]);
	if (event.kind === "error") return text("timelineError", [event.seq, event.phase ?? "", event.message ?? ""]);
	return text("timelineOther", [event.seq, event.kind, duration(ms), event.message ?? ""]);
}

/** The rows the log shows under a filter. */
export function filterEvents(events: RunEvent[], filter: EventFilter): RunEvent[] {
	const needle = filter.text.trim().toLowerCase();
	return events.filter(event => (!filter.kind || event.kind === filter.kind) && (!filter.phase || event.phase === filter.phase)
		&& (!needle || [event.message, event.details, event.kind, event.phase, event.httpStatus].some(value => String(value ?? "").toLowerCase().includes(needle))));
}

/** The distinct values of a field, for the filter's select ("" first: all). */
export function choices(events: RunEvent[], field: "kind" | "phase", allText: string): Array<{ key: string; text: string }> {
	const values = [...new Set(events.map(e => e[field]).filter((v): v is string => Boolean(v)))].sort();
	return [{ key: "", text: allText }, ...values.map(value => ({ key: value, text: value }))];
}

/** A pipeline's latest run when it failed: its ID and where and why it failed; null otherwise. */
export async function lastFailedRun(model: ODataModel, pipeline: string): Promise<{ runId: string; failure: Failure } | null> {
	const binding = model.bindList("/PipelineRuns", undefined, new Sorter("startTime", true), new Filter("pipeline_name", FilterOperator.EQ, pipeline),
		{ $select: "ID,status,failedAt,error" }) as ODataListBinding;
	try {
		const [latest] = await binding.requestContexts(0, 1);
		const run = latest?.getObject() as { ID: string; status: string; failedAt: string | null; error: string | null } | undefined;
		if (!run || run.status !== "failed") return null;
		return { runId: run.ID, failure: failureOf(run.failedAt, run.error, await firstError(model, run.ID)) };
	} finally {
		binding.destroy();
	}
}
