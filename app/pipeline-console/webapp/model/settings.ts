/**
 * The typed configuration editor's logic (issue 25, point 3), free of UI5 controls: one editor per
 * overridable setting built from the rule the server serves in `configView()` (the rule its
 * validator checks), inline checks against that rule as the user types, the diff of the edits
 * against the current overrides, and "reset to coded". A draft is the override as text; an empty
 * draft means "no override" (the coded value or the default applies).
 */

export type SettingType = "enum" | "integer" | "number" | "boolean" | "text" | "schedule" | "duration" | "json";

/** As served by configView() (lib/engine/config/rules.ts). */
export interface SettingRule {
	type: SettingType;
	values?: string[];
	min?: number;
	max?: number;
	minExclusive?: boolean;
	maxLength?: number;
	pattern?: string;
	unit?: "ms";
}

export interface ServedField {
	path: string;
	coded: unknown;
	override: unknown;
	effective: unknown;
	source: string;
	overridable: boolean;
	rule?: SettingRule;
}

export type Control = "select" | "number" | "switch" | "text" | "schedule" | "json";
/** `""`: the coded schedule (no override); `off`: no schedule (override null). */
export type ScheduleKind = "" | "every" | "cron" | "off";

export interface ScheduleDraft {
	kind: ScheduleKind;
	every: string;
	cron: string;
	engine: "spawn" | "queued";
}

export interface SettingEditor {
	path: string;
	control: Control;
	rule: SettingRule;
	coded: unknown;
	effective: unknown;
	source: string;
	/** The current override (null: none). */
	override: unknown;
	hasOverride: boolean;
	/** The override being edited, as text; "" = none. */
	draft: string;
	/** A switch's position: the draft's, else the effective value. */
	state: boolean;
	schedule: ScheduleDraft;
	/** A select's entry: {@link CODED} or one of the rule's values (the draft follows it). */
	choice: string;
	/** Select entries: {@link CODED} (the coded value or the default) first, then the rule's values. */
	options: Array<{ key: string; text: string }>;
	valueState: "None" | "Error" | "Warning";
	valueStateText: string;
	/** The draft differs from the current override. */
	changed: boolean;
	/** Next fire times of the schedule being edited, as served by previewSchedule(). */
	preview: string;
}

export interface Change {
	path: string;
	/** `set`: an override; `clear`: back to the coded value. */
	action: "set" | "clear";
	from: string;
	to: string;
	value?: unknown;
}

/** The select entry "no override": the coded value or the default applies. */
export const CODED = "@coded";

const CONTROL: Record<SettingType, Control> = {
	enum: "select", integer: "number", number: "number", boolean: "switch", text: "text", duration: "text", schedule: "schedule", json: "json"
};

/** Text of a value as shown and edited: strings as they are, the rest as JSON. */
export function show(value: unknown): string {
	if (value === undefined || value === null) return "";
	return typeof value === "string" ? value : JSON.stringify(value);
}

function scheduleDraft(override: unknown, hasOverride: boolean): ScheduleDraft {
	const draft: ScheduleDraft = { kind: "", every: "", cron: "", engine: "spawn" };
	if (!hasOverride) return draft;
	if (override === null) return { ...draft, kind: "off" };
	const value = (typeof override === "object" ? override : typeof override === "string" && override.trim().split(/\s+/).length >= 5 ? { cron: override } : { every: override }) as { every?: unknown; cron?: unknown; engine?: string };
	if (value.cron) return { kind: "cron", every: "", cron: String(value.cron), engine: "queued" };
	return { kind: "every", every: show(value.every ?? ""), cron: "", engine: value.engine === "queued" ? "queued" : "spawn" };
}

/** One editor per overridable setting the server gave a rule for. */
export function editorsOf(fields: ServedField[], codedText: (field: ServedField) => string): SettingEditor[] {
	return fields.filter(field => field.overridable && field.rule).map(field => {
		const rule = field.rule!;
		const hasOverride = field.source === "override";
		const draft = hasOverride ? show(field.override) : "";
		const editor: SettingEditor = {
			path: field.path, control: CONTROL[rule.type] ?? "json", rule,
			coded: field.coded, effective: field.effective, source: field.source,
			override: hasOverride ? field.override : null, hasOverride,
			draft, choice: draft || CODED, state: false, schedule: scheduleDraft(field.override, hasOverride),
			options: [{ key: CODED, text: codedText(field) }, ...(rule.values ?? []).map(value => ({ key: value, text: value }))],
			valueState: "None", valueStateText: "", changed: false, preview: ""
		};
		editor.state = rule.type === "boolean" ? (draft ? draft === "true" : field.effective === true) : false;
		return editor;
	});
}

/** A schedule draft as the override it sets (undefined: no override). */
export function scheduleValue(schedule: ScheduleDraft): unknown {
	if (schedule.kind === "off") return null;
	if (schedule.kind === "cron") return { cron: schedule.cron.trim(), engine: "queued" };
	if (schedule.kind === "every") {
		const every = schedule.every.trim();
		return { every: /^\d+$/.test(every) ? Number(every) : every, engine: schedule.engine };
	}
	return undefined;
}

/** A select's entry chosen: the draft follows (the coded entry is no override). */
export function choose(editor: SettingEditor, choice: string): void {
	editor.choice = choice;
	editor.draft = choice === CODED ? "" : choice;
}

/** The override an editor's draft sets: `{ none: true }` when it sets none. */
export function valueOf(editor: SettingEditor): { none: true } | { value: unknown } {
	if (editor.control === "schedule") {
		const value = scheduleValue(editor.schedule);
		return value === undefined ? { none: true } : { value };
	}
	const draft = editor.draft.trim();
	if (!draft) return { none: true };
	switch (editor.rule.type) {
		case "integer":
		case "number":
			return { value: Number(draft) };
		case "boolean":
			return { value: draft === "true" };
		case "duration":
			return { value: /^\d+$/.test(draft) ? Number(draft) : draft };
		case "json":
			try {
				return { value: JSON.parse(draft) as unknown };
			} catch {
				return { value: draft }; // a bare word such as skip
			}
		default:
			return { value: editor.draft };
	}
}

/**
 * Why an editor's draft breaks its rule (a message key and its arguments), or undefined. The
 * rules are the served ones; what only the whole config can tell (a cron's gaps, a delta with a
 * query source) the server's validate-only call and schedule preview answer.
 */
export function problemOf(editor: SettingEditor): { key: string; args: unknown[] } | undefined {
	const { rule } = editor;
	if (editor.control === "schedule") {
		const { kind, every, cron } = editor.schedule;
		if (kind === "every") {
			const text = every.trim();
			if (/^\d+$/.test(text)) {
				const ms = Number(text);
				if (ms < (rule.min ?? 1) || ms > (rule.max ?? Infinity)) return { key: "ruleScheduleRange", args: [rule.min, rule.max] };
			} else if (!rule.pattern || !new RegExp(rule.pattern).test(text)) return { key: "ruleDuration", args: [] };
		}
		if (kind === "cron" && cron.trim().split(/\s+/).length !== 5) return { key: "ruleCron", args: [] };
		return undefined;
	}
	const draft = editor.draft.trim();
	if (!draft) return undefined;
	switch (rule.type) {
		case "enum":
			return rule.values?.includes(draft) ? undefined : { key: "ruleEnum", args: [(rule.values ?? []).join(", ")] };
		case "integer":
			return /^[+-]?\d+$/.test(draft) && Number(draft) >= rule.min! && Number(draft) <= rule.max! ? undefined : { key: "ruleInteger", args: [rule.min, rule.max] };
		case "number": {
			const n = Number(draft);
			const low = rule.minExclusive ? n > rule.min! : n >= rule.min!;
			return Number.isFinite(n) && low && n <= rule.max! ? undefined : { key: rule.minExclusive ? "ruleNumberExclusive" : "ruleNumber", args: [rule.min, rule.max] };
		}
		case "text":
			if (rule.maxLength !== undefined && codePoints(editor.draft) > rule.maxLength) return { key: "ruleLength", args: [rule.maxLength] };
			return rule.pattern && !new RegExp(rule.pattern).test(editor.draft) ? { key: "rulePattern", args: [] } : undefined;
		case "duration":
			if (/^\d+$/.test(draft)) return Number(draft) >= (rule.min ?? 1) ? undefined : { key: "ruleDuration", args: [] };
			return rule.pattern && new RegExp(rule.pattern).test(draft) ? undefined : { key: "ruleDuration", args: [] };
		case "json":
			if (/^[\w.%-]+$/.test(draft)) return undefined;
			try {
				JSON.parse(draft);
				return undefined;
			} catch {
				return { key: "ruleJson", args: [] };
			}
		default:
			return undefined;
	}
}

/** Characters as the server counts them: code points (a surrogate pair is one). */
function codePoints(text: string): number {
	return text.length - (text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0);
}

/** Whether the editor's draft differs from the current override. */
export function isChanged(editor: SettingEditor): boolean {
	const now = valueOf(editor);
	if ("none" in now) return editor.hasOverride;
	return !editor.hasOverride || JSON.stringify(now.value) !== JSON.stringify(editor.override);
}

/** The edits against the current overrides, in the editors' order. */
export function diff(editors: SettingEditor[]): Change[] {
	const changes: Change[] = [];
	for (const editor of editors) {
		if (!isChanged(editor)) continue;
		const now = valueOf(editor);
		const from = (editor.hasOverride ? show(editor.override) : show(editor.effective)) || "–";
		if ("none" in now) changes.push({ path: editor.path, action: "clear", from, to: show(editor.coded) || "–" });
		else changes.push({ path: editor.path, action: "set", from, to: show(now.value) || "null", value: now.value });
	}
	return changes;
}

/** The payloads of setOverrides and clearOverrides for a diff. */
export function payloads(changes: Change[]): { overrides: Record<string, unknown>; cleared: string[] } {
	const overrides: Record<string, unknown> = {};
	const cleared: string[] = [];
	for (const change of changes) {
		if (change.action === "clear") cleared.push(change.path);
		else overrides[change.path] = change.value;
	}
	return { overrides, cleared };
}

/** "Reset to coded": the editor sets no override any more (saved with the others). */
export function resetToCoded(editor: SettingEditor): void {
	editor.draft = "";
	editor.choice = CODED;
	editor.schedule = { kind: "", every: "", cron: "", engine: "spawn" };
	if (editor.rule.type === "boolean") editor.state = editor.coded === null || editor.coded === undefined ? editor.effective === true : editor.coded === true;
	editor.preview = "";
}
