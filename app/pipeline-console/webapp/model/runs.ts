import type Context from "sap/ui/model/odata/v4/Context";
import type Table from "sap/m/Table";
import Column from "sap/m/Column";
import ColumnListItem from "sap/m/ColumnListItem";
import Text from "sap/m/Text";
import { duration, type HistoryRun } from "../control/HistoryChart";
import { display, number, type InspectResult, type Progress } from "./types";
import { dateTime, runMs, time, type Text as Texts } from "./format";

/** A run's progress; the progress fields are null (unknown) when the service does not have them. */
export function progressOf(text: Texts, run: Context): Progress {
	const numeric = (field: string): number | null => {
		const value = run.getProperty(field) as unknown;
		return value === null || value === undefined || value === "" ? null : Number(value);
	};
	const created = numeric("statistics_created") ?? 0;
	const updated = numeric("statistics_updated") ?? 0;
	const unchanged = numeric("statistics_unchanged") ?? 0;
	const deleted = numeric("statistics_deleted") ?? 0;
	const processed = numeric("processed") ?? created + updated + unchanged + deleted;
	const expected = numeric("expected");
	const percent = expected === null ? null : numeric("percent") ?? (expected > 0 ? Math.min(100, Math.round(processed / expected * 10000) / 100) : 0);
	const ms = runMs(run.getProperty("startTime") as string | null, null);
	const rate = numeric("rowsPerSecond") ?? (ms ? Math.round(processed / Math.max(ms / 1000, 0.001) * 100) / 100 : null);
	const remainingMs = numeric("remainingMs");
	const eta = (run.getProperty("eta") as string | null | undefined) ?? null;
	const parts = [expected === null ? text("progressRead", [number(processed)]) : text("progressOf", [number(processed), number(expected), percent ?? 0])];
	if (rate !== null) parts.push(text("progressRate", [number(rate)]));
	if (remainingMs !== null && eta) parts.push(text("progressEta", [duration(remainingMs), time(eta)]));
	return { created, updated, unchanged, deleted, processed, expected, percent, rate, remainingMs, eta, display: parts.join(" · ") };
}

/** A run as the history chart draws it. */
export function historyRun(text: Texts, run: Context): HistoryRun {
	const status = String(run.getProperty("status") ?? "");
	const start = run.getProperty("startTime") as string | null;
	const durationMs = runMs(start, run.getProperty("endTime") as string | null) ?? 0;
	const rows = ["statistics_created", "statistics_updated", "statistics_deleted"].reduce((sum, field) => sum + Number(run.getProperty(field) ?? 0), 0);
	return {
		id: String(run.getProperty("ID") ?? ""), status, start: start ?? "", durationMs, rows,
		label: text("historyRun", [dateTime(start), status, duration(durationMs), number(rows)])
	};
}

/** Builds columns and rows of a preview table from an inspectData result. */
export function fillTable(table: Table, result: InspectResult): void {
	table.destroyColumns();
	table.destroyItems();
	for (const column of result.columns) table.addColumn(new Column({ header: new Text({ text: column.name, tooltip: column.type }) }));
	for (const row of result.rows)
		table.addItem(new ColumnListItem({ cells: result.columns.map(c => new Text({ text: display(row[c.name]), wrapping: false, tooltip: display(row[c.name]) || undefined })) }));
}
