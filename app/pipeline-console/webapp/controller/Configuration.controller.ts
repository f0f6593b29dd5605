import Controller from "sap/ui/core/mvc/Controller";
import JSONModel from "sap/ui/model/json/JSONModel";
import type ODataModel from "sap/ui/model/odata/v4/ODataModel";
import type ResourceModel from "sap/ui/model/resource/ResourceModel";
import type ResourceBundle from "sap/base/i18n/ResourceBundle";
import MessageToast from "sap/m/MessageToast";
import type Dialog from "sap/m/Dialog";
import type Event from "sap/ui/base/Event";
import type Control from "sap/ui/core/Control";
import type { Switch$ChangeEvent } from "sap/m/Switch";
import type { Select$ChangeEvent } from "sap/m/Select";
import Api, { apiError } from "../model/Api";
import { display, type FlowData } from "../model/types";
import * as pipelineFormat from "../model/formatPipeline";
import type Component from "../Component";
import { CODED, choose, diff, editorsOf, isChanged, payloads, problemOf, resetToCoded, scheduleValue, show, type ServedField, type SettingEditor } from "../model/settings";

/** Next fire times shown under a schedule being edited. */
const PREVIEW_COUNT = 3;
/** Waits this long after the last keystroke before asking the server for a schedule preview. */
const PREVIEW_DEBOUNCE = 300;

interface Problem {
	target: string;
	message: string;
}

/**
 * The Configuration tab as a nested view: a typed editor per overridable setting (issue 25,
 * point 3). The owner calls {@link showPipeline}; the view loads itself through model/Api.ts and
 * keeps its state in its own `cfg` model. A save that fails keeps every edit and marks the field
 * the server named; nothing reloads until a save succeeded.
 *
 * @namespace pipeline.console.controller
 */
export default class Configuration extends Controller {
	private api!: Api;
	private readonly cfg = new JSONModel({ name: null, editors: [], changes: [] });
	private previewTimer?: ReturnType<typeof setTimeout>;
	private loading?: Promise<void>;
	/** Set by the owner after each save, so that the list and the overview follow. */
	public onSaved?: () => void;
	/** Set by the owner: the configView() each load answered (the events section shows part of it). */
	public onLoaded?: (loaded: { name: string; config: unknown }) => void;

	public onInit(): void {
		this.getView()!.setModel(this.cfg, "cfg");
		// the shell's routing: the pipeline comes from ui>/selected; it loads when that changes, when
		// its tab opens and when ui>/configReload is set (a schedule changed elsewhere). The overview's
		// Events section reads ui>/config, so it loads for every pipeline opened, not only on its tab.
		const component = this.getOwnerComponent() as Component;
		const ui = component.getModel("ui") as JSONModel;
		const show = () => {
			const name = ui.getProperty("/selected") as string | null;
			if (name) void this.showPipeline(name);
		};
		ui.bindProperty("/selected").attachChange(show);
		ui.bindProperty("/tab").attachChange(() => { if (ui.getProperty("/tab") === "config") show(); });
		ui.bindProperty("/configReload").attachChange(() => {
			const name = ui.getProperty("/selected") as string | null;
			if (name) void this.load(name);
		});
		this.onSaved ??= () => void component.getPoller().poll();
		this.onLoaded ??= loaded => { if (ui.getProperty("/selected") === loaded.name) ui.setProperty("/config", loaded.config); };
	}

	public formatDeviations(deviations: FlowData["deviations"] | undefined): string {
		return pipelineFormat.deviations(key => this.text(key), deviations);
	}

	public onExit(): void {
		clearTimeout(this.previewTimer);
	}

	private odata(): ODataModel {
		return this.getOwnerComponent()!.getModel() as ODataModel;
	}

	private bundle(): ResourceBundle {
		return (this.getOwnerComponent()!.getModel("i18n") as ResourceModel).getResourceBundle() as ResourceBundle;
	}

	private text(key: string, args: unknown[] = []): string {
		return this.bundle().getText(key, args.map(display)) ?? key;
	}

	private editors(): SettingEditor[] {
		return (this.cfg.getProperty("/editors") ?? []) as SettingEditor[];
	}

	private name(): string | null {
		return this.cfg.getProperty("/name") as string | null;
	}

	public formatValue(value: unknown): string {
		return value === null || value === undefined ? "–" : show(value);
	}

	/** A number input's range as its placeholder ("1 – 100000", "≥ 0", "0 – 2147483647 ms"). */
	public formatRange(min: number | undefined, max: number | undefined, unit: string | undefined): string {
		if (min === undefined || min === null) return "";
		const range = max === undefined || max === null || max >= Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `${min} – ${max}`;
		return unit ? `${range} ${unit}` : range;
	}

	/**
	 * Shows a pipeline's settings. The same pipeline again (tab switches, the owner's reloads) keeps
	 * unsaved edits and shares a load under way; another pipeline drops them.
	 */
	public showPipeline(name: string): Promise<void> {
		if (name === this.name() && (this.loading || this.editors().some(editor => editor.changed))) return this.loading ?? Promise.resolve();
		return this.load(name);
	}

	private load(name: string): Promise<void> {
		this.api ??= new Api(this.odata());
		if (name !== this.name()) this.cfg.setProperty("/editors", []);
		this.cfg.setProperty("/name", name);
		const loading = this.fetch(name).finally(() => { if (this.loading === loading) this.loading = undefined; });
		return (this.loading = loading);
	}

	private async fetch(name: string): Promise<void> {
		try {
			const view = await this.api.configView<{ fields: ServedField[] }>(name);
			if (this.name() !== name) return;
			const editors = editorsOf(view.fields, field => field.coded === null || field.coded === undefined
				? this.text("defaultOption", [show(field.effective) || "–"]) : this.text("codedOption", [show(field.coded)]));
			this.cfg.setProperty("/editors", editors);
			this.onLoaded?.({ name, config: view });
		} catch (error) {
			MessageToast.show(apiError(error).message);
		}
	}

	private editorOf(event: Event): { editor: SettingEditor; path: string } | undefined {
		const context = (event.getSource() as Control).getBindingContext("cfg");
		if (!context) return undefined;
		return { editor: context.getObject() as SettingEditor, path: context.getPath() };
	}

	/** Inline validation as the user types or selects, against the served rule. */
	public onEdit(event: Event): void {
		const found = this.editorOf(event);
		if (!found) return;
		this.check(found.editor);
		if (found.editor.control === "schedule") this.schedulePreview(found.path, found.editor);
		this.cfg.refresh(true);
	}

	public onChoose(event: Select$ChangeEvent): void {
		const found = this.editorOf(event);
		if (!found) return;
		choose(found.editor, event.getParameter("selectedItem")?.getKey() ?? CODED);
		this.check(found.editor);
		this.cfg.refresh(true);
	}

	public onSwitch(event: Switch$ChangeEvent): void {
		const found = this.editorOf(event);
		if (!found) return;
		found.editor.draft = String(event.getParameter("state"));
		this.check(found.editor);
		this.cfg.refresh(true);
	}

	public onReset(event: Event): void {
		const found = this.editorOf(event);
		if (!found) return;
		resetToCoded(found.editor);
		this.check(found.editor);
		this.cfg.refresh(true);
	}

	/** Marks an editor by its rule; returns whether it passes. */
	private check(editor: SettingEditor): boolean {
		const problem = problemOf(editor);
		editor.valueState = problem ? "Error" : "None";
		editor.valueStateText = problem ? this.text(problem.key, problem.args) : "";
		editor.changed = isChanged(editor);
		return !problem;
	}

	/** The next fire times from the server (the validator's parser answers a bad schedule with 400). */
	private schedulePreview(path: string, editor: SettingEditor): void {
		clearTimeout(this.previewTimer);
		const value = scheduleValue(editor.schedule);
		if (value === undefined || value === null || editor.valueState === "Error") {
			this.cfg.setProperty(`${path}/preview`, "");
			return;
		}
		this.previewTimer = setTimeout(() => void this.loadPreview(path, editor, JSON.stringify(value)), PREVIEW_DEBOUNCE);
	}

	private async loadPreview(path: string, editor: SettingEditor, schedule: string): Promise<void> {
		try {
			const preview = await this.api.json<{ next: string[] }>(this.api.unbound("previewSchedule", { schedule, count: PREVIEW_COUNT }));
			if (JSON.stringify(scheduleValue(editor.schedule)) !== schedule) return;
			const times = preview.next.map(at => new Date(at).toLocaleString());
			this.cfg.setProperty(`${path}/preview`, this.text("schedulePreview", [times.join(" · ")]));
		} catch (error) {
			if (JSON.stringify(scheduleValue(editor.schedule)) !== schedule) return;
			editor.valueState = "Error";
			editor.valueStateText = apiError(error).message;
			this.cfg.setProperty(`${path}/preview`, "");
			this.cfg.refresh(true);
		}
	}

	/** Marks the fields the server named; the edits stay as typed. */
	private mark(problems: Problem[]): void {
		for (const problem of problems) {
			const editor = this.editors().find(e => problem.target === e.path || problem.target.startsWith(`${e.path}.`));
			if (!editor) {
				MessageToast.show(problem.message);
				continue;
			}
			editor.valueState = "Error";
			editor.valueStateText = problem.message;
		}
		this.cfg.refresh(true);
	}

	/** Checks every edit (inline rules, then the server's validate-only call) and shows the diff. */
	public async onSave(): Promise<void> {
		const name = this.name();
		if (!name) return;
		const editors = this.editors();
		const failing = editors.filter(editor => !this.check(editor));
		this.cfg.refresh(true);
		if (failing.length) {
			MessageToast.show(this.text("settingsInvalid", [failing.map(e => e.path).join(", ")]));
			return;
		}
		const changes = diff(editors);
		if (!changes.length) {
			MessageToast.show(this.text("noOverrideChanges"));
			return;
		}
		const { overrides } = payloads(changes);
		if (Object.keys(overrides).length) {
			try {
				const result = await this.api.json<{ valid: boolean; problems: Problem[] }>(this.api.bound(name, "validateOverrides", { overrides: JSON.stringify(overrides) }));
				if (!result.valid) return this.mark(result.problems);
			} catch (error) {
				const e = apiError(error);
				return this.mark([{ target: e.target ?? "", message: e.message }]);
			}
		}
		this.cfg.setProperty("/changes", changes);
		(this.byId("diffDialog") as Dialog).open();
	}

	public onCancelSave(): void {
		(this.byId("diffDialog") as Dialog).close();
	}

	/** Saves the diff; on failure the edits stay and the named field is marked. */
	public async onConfirmSave(): Promise<void> {
		(this.byId("diffDialog") as Dialog).close();
		const name = this.name();
		if (!name) return;
		const { overrides, cleared } = payloads(diff(this.editors()));
		try {
			if (Object.keys(overrides).length) await this.api.bound(name, "setOverrides", { overrides: JSON.stringify(overrides) });
			if (cleared.length) await this.api.bound(name, "clearOverrides", { keys: cleared.join(",") });
		} catch (error) {
			const e = apiError(error);
			this.mark([{ target: e.target ?? "", message: e.message }]);
			return;
		}
		MessageToast.show(this.text("overridesSaved", [name]));
		await this.load(name);
		this.onSaved?.();
	}
}
