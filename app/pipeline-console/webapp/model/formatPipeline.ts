import { duration } from "../control/HistoryChart";
import { display, number, parseJson, type DriftReport, type FlowData, type Progress, type SweepState } from "./types";
import { dateTime, time, type Text } from "./format";
import { setting } from "./effective";

// Formatters of a pipeline's fields (endpoints, deletes, sweep, drift, progress), given the texts.

export { setting };

/** A source or target as readable fields: service, entity, kind, delta, paging (the JSON is the tooltip). */
export function endpoint(text: Text, json: unknown, baseConfig: unknown, overrides: unknown, side: "source" | "target"): string {
	const config = parseJson<Record<string, unknown>>(json);
	if (!config) return display(json);
	const lines: string[] = [];
	if (config.service) lines.push(text("fieldService", [config.service]));
	if (config.entity) lines.push(text("fieldEntity", [config.entity]));
	const kind = config.kind ?? config.type ?? config.adapter ?? (config.query ? text("kindQuery")
		: config.url || config.path ? text("kindRest") : config.service ? text("kindService") : text("kindLocal"));
	lines.push(text("fieldKind", [typeof kind === "string" ? kind : display(kind)]));
	if (side === "source") {
		const mode = setting(baseConfig, overrides, "mode");
		const delta = setting(baseConfig, overrides, "delta") as { mode?: string; field?: string } | undefined;
		lines.push(text("fieldDelta", [mode === "full" || !delta ? text("deltaFull")
			: delta.field ? text("deltaOn", [delta.mode ?? "timestamp", delta.field]) : delta.mode ?? display(delta)]));
		// the effective batch size: an override (e.g. the flat key `source.batchSize`) over the coded one
		const batch = setting(baseConfig, overrides, "source.batchSize") ?? config.batchSize;
		lines.push(text("fieldPaging", [batch ? text("pagingBatch", [number(batch)]) : text("pagingDefault")]));
	} else if (config.batchSize) {
		lines.push(text("fieldPaging", [text("pagingBatch", [number(config.batchSize)])]));
	}
	return lines.join("\n");
}

export function deviations(text: Text, list: FlowData["deviations"] | undefined): string {
	if (!list?.length) return "";
	return `${text("deviations")}: ${list.map(d => `${d.path} = ${display(d.value)} (default ${display(d.default)})`).join("; ")}`;
}

/** The delete strategy as readable text: soft-delete field and action, or the sweep's schedule and maxShare; none. */
export function deletes(text: Text, baseConfig: unknown, overrides: unknown): string {
	const parts: string[] = [];
	const field = setting(baseConfig, overrides, "delta.deletedField");
	if (typeof field === "string" && field) {
		const action = setting(baseConfig, overrides, "delta.deletedAction");
		parts.push(text("deletesSoft", [field, text(action === "flag" ? "deletesSoftFlag" : "deletesSoftDelete")]));
	}
	const sweep = setting(baseConfig, overrides, "deletes.sweep");
	if (sweep) {
		const every = typeof sweep === "object" ? (sweep as { every?: unknown }).every : undefined;
		const when = sweep === "always" ? text("sweepAlways")
			: typeof every === "number" ? text("sweepRuns", [every])
			: typeof every === "string" ? text("sweepInterval", [every]) : display(sweep);
		const maxShare = Number(setting(baseConfig, overrides, "deletes.maxShare") ?? 0.5);
		const force = setting(baseConfig, overrides, "deletes.force") === true;
		parts.push(text("deletesSweep", [when, `${Math.round(maxShare * 1000) / 10} %`]) + (force ? text("deletesSweepForce") : ""));
	}
	return parts.length ? parts.join("; ") : text("deletesNone");
}

export function sweep(text: Text, lastSweep: unknown): string {
	const state = parseJson<SweepState>(lastSweep);
	if (!state?.status) return text("sweepNever");
	const at = dateTime(state.time ?? null);
	if (state.status === "failed") return text("sweepFailed", [at, number(state.durationMs), state.error ?? ""]);
	return text("sweepCompleted", [at, number(state.deleted), number(state.rows), number(state.sourceKeys), number(state.targetKeys), number(state.durationMs)]);
}

export function sweepState(lastSweep: unknown): string {
	const state = parseJson<SweepState>(lastSweep);
	return state?.status === "failed" ? "Error" : state?.status === "completed" ? "Success" : "None";
}

export function driftTitle(text: Text, drift: DriftReport | null): string {
	if (!drift) return "";
	return text(drift.breaking ? "driftTitleBreaking" : "driftTitle", [drift.source, drift.basis, drift.policy, dateTime(drift.checkedAt ?? null)]);
}

/** A run's drift cell: "drift (n)" / "breaking drift (n)". */
export function runDrift(text: Text, drift: unknown): string {
	const report = parseJson<DriftReport>(drift);
	if (!report) return "";
	return text(report.breaking ? "runDriftBreaking" : "runDrift", [report.changes?.length ?? 0]);
}

export function runDriftState(drift: unknown): string {
	const report = parseJson<DriftReport>(drift);
	return !report ? "None" : report.breaking ? "Error" : "Warning";
}

export function driftMessages(drift: unknown): string {
	return (parseJson<DriftReport>(drift)?.changes ?? []).map(c => c.message).join("\n");
}

export function freshness(text: Text, value: string | null, maxStaleness: number | string | null): string {
	const limit = maxStaleness !== null && maxStaleness !== undefined ? duration(Number(maxStaleness)) : "";
	if (value === "stale") return text("freshStale", [limit]);
	if (value === "fresh") return text("freshFresh", [limit]);
	return text("freshUnknown");
}

export function progress(text: Text, pattern: string, value: Progress | null): string {
	if (!pattern) return "";
	if (!value) return `${pattern}: ${text("progressStarting")}`;
	const total = Math.max(value.processed, value.created + value.updated + value.unchanged + value.deleted);
	const parts = [text("progressValue", [number(total), number(value.created), number(value.updated), number(value.unchanged), number(value.deleted)])];
	if (value.expected !== null) parts.push(text("progressOf", [number(total), number(value.expected), value.percent ?? 0]));
	if (value.rate !== null) parts.push(text("progressRate", [number(value.rate)]));
	if (value.remainingMs !== null && value.eta) parts.push(text("progressEta", [duration(value.remainingMs), time(value.eta)]));
	return `${pattern}: ${parts.join(" · ")}`;
}
