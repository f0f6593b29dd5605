import type { GraphData } from "../control/layout";

// The shapes of the service's answers and of the view state the console works with, and small value helpers.

/** The active run's progress (ui>/progress). */
export interface Progress {
	created: number;
	updated: number;
	unchanged: number;
	deleted: number;
	processed: number;
	expected: number | null;
	percent: number | null;
	rate: number | null;
	remainingMs: number | null;
	eta: string | null;
	display: string;
}

export interface ConfigField {
	path: string;
	coded: unknown;
	override: unknown;
	effective: unknown;
	source: "override" | "coded" | "default";
	overridable: boolean;
}

export interface InspectResult {
	columns: Array<{ name: string; type: string }>;
	rows: Array<Record<string, unknown>>;
	hasMore: boolean;
	limitedSupport: boolean;
}

export interface FlowData extends GraphData {
	deviations: Array<{ path: string; value: unknown; default: unknown }>;
	hooks: Array<{ phase: string; event: string; scope: string; handler: string }>;
	hasDeviations?: boolean;
}

export interface DriftReport {
	runId?: string;
	source: string;
	basis: string;
	policy: string;
	breaking: boolean;
	checkedAt?: string;
	changes: Array<{ change: string; column: string; target?: string; was?: string; now?: string; targetType?: string; breaking: boolean; message: string }>;
	message?: string;
}

export interface SweepState {
	time?: string;
	status?: "completed" | "failed";
	deleted?: number;
	sourceKeys?: number;
	targetKeys?: number;
	rows?: number;
	durationMs?: number;
	error?: string;
}

/** The run whose rejects the rejects table shows; unset: the pipeline's open rejects. */
export interface RejectsState {
	name: string | null;
	run: string | null;
	runStart: string | null;
	total: number;
	title: string;
}

export interface InspectorFilter {
	field: string;
	op: string;
	value: string;
}

/** A JSON text (LargeString) parsed; null when empty or not JSON. */
export function parseJson<T>(value: unknown): T | null {
	if (typeof value !== "string" || !value) return (value && typeof value === "object" ? value : null) as T | null;
	try {
		return JSON.parse(value) as T;
	} catch {
		return null;
	}
}

export const number = (value: unknown): string => Number(value ?? 0).toLocaleString("en-US");

export const display = (value: unknown): string => value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
