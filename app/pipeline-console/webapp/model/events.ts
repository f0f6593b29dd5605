import Sorter from "sap/ui/model/Sorter";
import Filter from "sap/ui/model/Filter";
import FilterOperator from "sap/ui/model/FilterOperator";
import DateFormat from "sap/ui/core/format/DateFormat";
import type ODataModel from "sap/ui/model/odata/v4/ODataModel";
import type ODataListBinding from "sap/ui/model/odata/v4/ODataListBinding";
import type JSONModel from "sap/ui/model/json/JSONModel";
import { number } from "./types";

/** One row of `PipelineEventStats`: a pipeline's events of one minute. */
export interface EventStatsRow {
	minute: string;
	received: number | string | null;
	applied: number | string | null;
	skipped: number | string | null;
	lagP50: number | string | null;
	lagP95: number | string | null;
	lastEvent: string | null;
}

/** What the Events section shows (ui>/events). */
export interface EventSummary {
	pipeline: string;
	/** Rows of the last day the tracker holds for the pipeline (0: no events yet). */
	rows: number;
	received: number;
	applied: number;
	skipped: number;
	lagP50: number | null;
	lagP95: number | null;
	lastEvent: string | null;
	counts: string;
	lag: string;
	lagState: "None" | "Success" | "Warning";
	last: string;
}

const HOUR = 3_600_000;
/** A minute per row: an hour's rows and the one before them. */
const ROWS = 61;
/** The target: p95 at most 1 s at 100 changes per second. */
const LAG_TARGET_MS = 1000;

type Text = (key: string, args?: unknown[]) => string;

/** Received, applied and skipped over the last hour; lag p50/p95 and the last event from the newest row. */
export function summarize(pipeline: string, rows: EventStatsRow[], text: Text, now = Date.now()): EventSummary {
	const sorted = [...rows].sort((a, b) => b.minute.localeCompare(a.minute));
	const recent = sorted.filter(row => new Date(row.minute).getTime() >= now - HOUR);
	const sum = (field: "received" | "applied" | "skipped") => recent.reduce((total, row) => total + Number(row[field] ?? 0), 0);
	const withLag = recent.find(row => row.lagP95 !== null && row.lagP95 !== undefined);
	const lagP50 = withLag?.lagP50 === null || withLag?.lagP50 === undefined ? null : Number(withLag.lagP50);
	const lagP95 = withLag ? Number(withLag.lagP95) : null;
	const lastEvent = sorted.map(row => row.lastEvent).filter((at): at is string => Boolean(at)).sort().pop() ?? null;
	const [received, applied, skipped] = [sum("received"), sum("applied"), sum("skipped")];
	return {
		pipeline, rows: rows.length, received, applied, skipped, lagP50, lagP95, lastEvent,
		counts: text("eventsCountsValue", [number(received), number(applied), number(skipped)]),
		lag: lagP95 === null ? text("eventsNoLag") : text("eventsLagValue", [number(lagP50 ?? lagP95), number(lagP95)]),
		lagState: lagP95 === null ? "None" : lagP95 > LAG_TARGET_MS ? "Warning" : "Success",
		last: lastEvent ? DateFormat.getDateTimeInstance({ style: "medium" }).format(new Date(lastEvent)) : text("eventsNone")
	};
}

/**
 * The Events section of the pipeline detail: the pipeline's newest `PipelineEventStats` rows (one
 * per minute with events, so an hour is at most 61 rows), summed up into ui>/events on every poll.
 * PipelineViewer may read them. A service without the entity (an older plugin) shows nothing.
 */
export default class EventsSection {
	constructor(private readonly model: ODataModel, private readonly ui: JSONModel, private readonly text: Text, private readonly selected: () => string | null) {}

	clear(): void {
		this.ui.setProperty("/events", null);
	}

	async refresh(name: string): Promise<void> {
		const binding = this.model.bindList("/PipelineEventStats", undefined, new Sorter("minute", true), new Filter("pipeline", FilterOperator.EQ, name),
			{ $select: "pipeline,minute,received,applied,skipped,lagP50,lagP95,lastEvent" }) as ODataListBinding;
		try {
			const contexts = await binding.requestContexts(0, ROWS);
			if (this.selected() !== name) return;
			this.ui.setProperty("/events", summarize(name, contexts.map(c => c.getObject() as EventStatsRow), this.text));
		} catch {
			if (this.selected() === name) this.clear();
		} finally {
			binding.destroy();
		}
	}
}
