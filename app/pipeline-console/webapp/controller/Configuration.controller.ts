import type Event from "sap/ui/base/Event";
import type Control from "sap/ui/core/Control";
import MessageToast from "sap/m/MessageToast";
import Api from "../model/Api";
import * as pipelineFormat from "../model/formatPipeline";
import type { ConfigField, FlowData } from "../model/types";
import Base from "./Base";

/**
 * The Configuration tab: configView's fields with their overrides. Its interface to the rest is
 * small: it reads the pipeline from ui>/selected, loads when that changes, when its tab opens and
 * when ui>/configReload is set (a schedule changed), and asks the poller for a poll after saving.
 *
 * @namespace pipeline.console.controller
 */
export default class Configuration extends Base {
	private api!: Api;

	public onInit(): void {
		this.api = new Api(this.odata());
		// (the overview's Events section reads ui>/config/events too: loaded for every pipeline opened)
		const reload = () => {
			const name = this.selected();
			if (name) void this.load(name);
		};
		this.ui().bindProperty("/selected").attachChange(reload);
		this.ui().bindProperty("/tab").attachChange(() => {
			if (this.ui().getProperty("/tab") === "config") reload();
		});
		this.ui().bindProperty("/configReload").attachChange(reload);
	}

	public formatDeviations(deviations: FlowData["deviations"] | undefined): string {
		return pipelineFormat.deviations(this.t, deviations);
	}

	private async load(name: string): Promise<void> {
		try {
			const view = await this.api.configView<{ fields: ConfigField[] }>(name);
			if (this.selected() !== name) return;
			for (const field of view.fields) field.draft = field.source === "override" ? JSON.stringify(field.override) : "";
			this.ui().setProperty("/config", view);
		} catch (error) {
			this.showError(error);
		}
	}

	private async saved(name: string): Promise<void> {
		await Promise.all([this.load(name), this.poller().poll()]);
	}

	public async onSaveOverrides(): Promise<void> {
		const name = this.selected();
		if (!name) return;
		const fields = ((this.ui().getProperty("/config/fields") ?? []) as ConfigField[]).filter(f => f.overridable);
		const changes: Record<string, unknown> = {};
		const cleared: string[] = [];
		for (const field of fields) {
			const draft = (field.draft ?? "").trim();
			const current = field.source === "override" ? JSON.stringify(field.override) : "";
			if (draft === current) continue;
			if (!draft) {
				if (field.source === "override") cleared.push(field.path);
				continue;
			}
			try {
				changes[field.path] = JSON.parse(draft);
			} catch {
				// a bare word such as full is taken as a string
				if (/^[\w.-]+$/.test(draft) && !/^\d/.test(draft)) changes[field.path] = draft;
				else return this.showError(new Error(this.text("invalidJson", [field.path, draft])));
			}
		}
		if (!Object.keys(changes).length && !cleared.length) {
			MessageToast.show(this.text("noOverrideChanges"));
			return;
		}
		try {
			if (Object.keys(changes).length) await this.api.bound(name, "setOverrides", { overrides: JSON.stringify(changes) });
			if (cleared.length) await this.api.bound(name, "clearOverrides", { keys: cleared.join(",") });
			MessageToast.show(this.text("overridesSaved", [name]));
		} catch (error) {
			this.showError(error);
		}
		await this.saved(name);
	}

	public async onClearOverride(event: Event): Promise<void> {
		const name = this.selected();
		const path = (event.getSource() as Control).getBindingContext("ui")?.getProperty("path") as string | undefined;
		if (!name || !path) return;
		try {
			await this.api.bound(name, "clearOverrides", { keys: path });
			MessageToast.show(this.text("overrideCleared", [name, path]));
		} catch (error) {
			this.showError(error);
		}
		await this.saved(name);
	}
}
