import type Table from "sap/m/Table";
import type ColumnListItem from "sap/m/ColumnListItem";
import type Dialog from "sap/m/Dialog";
import type Page from "sap/m/Page";
import type Select from "sap/m/Select";
import type Event from "sap/ui/base/Event";
import type Control from "sap/ui/core/Control";
import type Context from "sap/ui/model/odata/v4/Context";
import type ODataContextBinding from "sap/ui/model/odata/v4/ODataContextBinding";
import type ODataListBinding from "sap/ui/model/odata/v4/ODataListBinding";
import type { ListBase$SelectionChangeEvent } from "sap/m/ListBase";
import type { Switch$ChangeEvent } from "sap/m/Switch";
import type { IconTabBar$SelectEvent } from "sap/m/IconTabBar";
import type { Route$PatternMatchedEvent } from "sap/ui/core/routing/Route";
import MessageBox from "sap/m/MessageBox";
import MessageToast from "sap/m/MessageToast";
import Api from "../model/Api";
import EventsSection from "../model/events";
import * as pipelineFormat from "../model/formatPipeline";
import * as changeTracking from "../model/changeTracking";
import { fillTable, historyRun, progressOf } from "../model/runs";
import { failureText, lastFailedRun } from "../model/runEvents";
import type { DriftReport, FlowData, InspectResult, Progress, RejectsState } from "../model/types";
import { parseJson } from "../model/types";
import Base from "./Base";

const PREVIEW_ROWS = 10;
/** Runs drawn by the history chart. */
const HISTORY_RUNS = 20;
const TABS = ["overview", "runs", "config", "flow", "preview"];

/**
 * Column 2: one pipeline (`#/pipelines/{name}/{tab}`): overview with progress, runs with history
 * and rejects, configuration (a view of its own), data flow and preview; start, flush, schedule.
 *
 * @namespace pipeline.console.controller
 */
export default class Detail extends Base {
	private api!: Api;
	private events!: EventsSection;
	private valueHelpsResumed = false;

	public onInit(): void {
		this.api = new Api(this.odata());
		this.events = new EventsSection(this.odata(), this.ui(), this.t, () => this.selected());
		this.ui().setProperty("/history", []);
		for (const route of ["pipeline", "inspect", "run"]) this.router().getRoute(route)?.attachPatternMatched((event: Route$PatternMatchedEvent) => this.onRoute(route, event));
		this.ui().bindProperty("/rejectsRun").attachChange(() => {
			if (!(this.ui().getProperty("/rejectsRun") as { run: unknown } | null)?.run) this.control<Table>("runsTable").removeSelections(true);
		});
		void this.component().ready().then(permissions => {
			if (permissions.view) this.poller().register("detail", () => this.refresh());
		});
	}

	private onRoute(route: string, event: Route$PatternMatchedEvent): void {
		const args = event.getParameter("arguments") as { name: string; tab?: string };
		const tab = route === "inspect" ? "preview" : route === "run" ? "runs" : TABS.includes(args.tab ?? "") ? args.tab! : "overview";
		this.select(args.name, tab);
	}

	// ---------------------------------------------------------------- formatters

	public formatProgress(pattern: string, progress: Progress | null): string {
		return pipelineFormat.progress(this.t, pattern, progress);
	}

	public formatFreshness(freshness: string | null, maxStaleness: number | string | null): string {
		return pipelineFormat.freshness(this.t, freshness, maxStaleness);
	}

	public formatEndpoint(json: unknown, baseConfig: unknown, overrides: unknown, side: "source" | "target"): string {
		return pipelineFormat.endpoint(this.t, json, baseConfig, overrides, side);
	}

	public formatLastKeyLabel(baseConfig: unknown, overrides: unknown): string {
		return changeTracking.lastKeyLabel(this.t, baseConfig, overrides);
	}

	public formatLastKey(lastKey: unknown, baseConfig: unknown, overrides: unknown): string {
		return changeTracking.lastKeyValue(lastKey, baseConfig, overrides);
	}

	public readsDeltaLinks(baseConfig: unknown, overrides: unknown): boolean {
		return changeTracking.readsDeltaLinks(baseConfig, overrides);
	}

	public formatChangeTracking(lastKey: unknown, baseConfig: unknown, overrides: unknown): string {
		return changeTracking.changeTracking(this.t, lastKey, baseConfig, overrides);
	}

	public changeTrackingState(lastKey: unknown): string {
		return changeTracking.changeTrackingState(lastKey);
	}

	public formatDeletes(baseConfig: unknown, overrides: unknown): string {
		return pipelineFormat.deletes(this.t, baseConfig, overrides);
	}

	/** The last sweep row is shown when there was one or the pipeline sweeps. */
	public hasSweep(lastSweep: unknown, baseConfig: unknown, overrides: unknown): boolean {
		return Boolean(lastSweep) || Boolean(pipelineFormat.setting(baseConfig, overrides, "deletes.sweep"));
	}

	public formatSweep(lastSweep: unknown): string {
		return pipelineFormat.sweep(this.t, lastSweep);
	}

	public sweepState(lastSweep: unknown): string {
		return pipelineFormat.sweepState(lastSweep);
	}

	public formatDriftTitle(drift: DriftReport | null): string {
		return pipelineFormat.driftTitle(this.t, drift);
	}

	// ---------------------------------------------------------------- selection and polling

	private select(name: string, tab: string): void {
		const changed = this.selected() !== name;
		const page = this.control<Page>("detailPage");
		this.ui().setProperty("/selected", name);
		this.ui().setProperty("/tab", tab);
		if (changed || !page.getElementBinding()) page.bindElement({ path: Api.pipelinePath(name) });
		if (changed) {
			this.ui().setProperty("/progress", null);
			this.ui().setProperty("/flow", null);
			this.ui().setProperty("/config", null);
			this.events.clear();
			void this.events.refresh(name);
			this.ui().setProperty("/lastFailure", null);
			void this.loadLastFailure(name);
			void this.loadFlow(name);
			this.control<Table>("runsTable").removeSelections(true);
			this.ui().setProperty("/rejectsRun", { name, run: null });
		}
		if (tab === "flow" && !changed) void this.loadFlow(name);
		// the preview reads data: PipelineAdmin only (a URL does not open it for other roles)
		if (tab === "preview" && this.perm().getProperty("/administer")) void this.loadPreview(name);
	}

	private async refresh(): Promise<void> {
		const name = this.selected();
		if (!name) return;
		const binding = this.control<Page>("detailPage").getElementBinding() as ODataContextBinding | undefined;
		await Promise.all([binding?.requestRefresh().catch(() => undefined), this.loadFlow(name), this.events.refresh(name), this.loadLastFailure(name)]);
	}

	/** The banner of a failed last run: where it failed, its first error, a link to its run page. */
	private async loadLastFailure(name: string): Promise<void> {
		try {
			const failed = await lastFailedRun(this.odata(), name);
			if (this.selected() !== name) return;
			this.ui().setProperty("/lastFailure", failed ? { runId: failed.runId, text: failureText(this.t, failed.failure, true) } : null);
		} catch {
			if (this.selected() === name) this.ui().setProperty("/lastFailure", null);
		}
	}

	/** The failed last run's page. */
	public onOpenFailedRun(): void {
		const name = this.selected();
		const runId = (this.ui().getProperty("/lastFailure") as { runId: string } | null)?.runId;
		if (name && runId) this.router().navTo("run", { name, runId });
	}

	private async loadFlow(name: string): Promise<void> {
		try {
			const flow = await this.api.flow<FlowData>(name);
			if (this.selected() !== name) return;
			flow.hasDeviations = flow.deviations.length > 0;
			const running = ((this.ui().getProperty("/running") ?? []) as string[]).includes(name);
			for (const node of flow.nodes) node.running = running && node.kind === "event";
			this.ui().setProperty("/flow", flow);
		} catch (error) {
			this.ui().setProperty("/flow", null);
			this.showError(error);
		}
	}

	private async loadPreview(name: string): Promise<void> {
		const table = this.control<Table>("previewTable");
		try {
			const result = await this.api.inspect<InspectResult>(name, { side: "target", top: PREVIEW_ROWS, skip: 0 });
			if (this.selected() === name) fillTable(table, result);
		} catch (error) {
			fillTable(table, { columns: [], rows: [], hasMore: false, limitedSupport: false });
			this.showError(error);
		}
	}

	public onCloseDetail(): void {
		this.router().navTo("home");
	}

	/** A tab is a URL of its own (back returns to the tab before). */
	public onTabSelect(event: IconTabBar$SelectEvent): void {
		const name = this.selected();
		const key = event.getParameter("key");
		if (name && key) this.router().navTo("pipeline", { name, tab: key === "overview" ? undefined : key });
	}

	// ---------------------------------------------------------------- runs

	/** Progress of the active run and the history chart, from the runs table's rows. */
	public onRunsUpdated(): void {
		const table = this.control<Table>("runsTable");
		// keeps the run whose rejects are shown selected after a refresh re-created the rows
		const rejects = this.ui().getProperty("/rejects") as RejectsState | undefined;
		for (const item of table.getItems() as ColumnListItem[]) {
			const id = item.getBindingContext()?.getProperty("ID") as string | undefined;
			const isSelected = Boolean(rejects?.run) && id === rejects?.run;
			if (item.getSelected() !== isSelected) item.setSelected(isSelected);
			if (isSelected && !rejects?.runStart) this.ui().setProperty("/rejectsRunStart", item.getBindingContext()?.getProperty("startTime") as string);
		}
		const contexts = table.getItems().map(i => i.getBindingContext() as Context | null).filter((c): c is Context => Boolean(c));
		const running = contexts.find(c => c.getProperty("status") === "running");
		this.ui().setProperty("/progress", running ? progressOf(this.t, running) : null);
		this.ui().setProperty("/history", contexts.slice(0, HISTORY_RUNS).reverse().map(c => historyRun(this.t, c)));
	}

	/** Selecting a run shows its rejected records. */
	public onRunSelect(event: ListBase$SelectionChangeEvent): void {
		const name = this.selected();
		const context = event.getParameter("listItem")?.getBindingContext();
		if (!name || !context) return;
		this.ui().setProperty("/rejectsRun", { name, run: { ID: context.getProperty("ID") as string, startTime: context.getProperty("startTime") as string } });
	}

	/** A run's schema drift, every change, in a message box (red when breaking). */
	public onShowRunDrift(event: Event): void {
		const report = parseJson<DriftReport>((event.getSource() as Control).getBindingContext()?.getProperty("drift"));
		if (!report) return;
		const text = `${this.formatDriftTitle(report)}\n\n${report.changes.map(c => `• ${c.message}${c.breaking ? " (breaking)" : ""}`).join("\n")}`;
		const options = { title: this.text("driftDialogTitle"), details: JSON.stringify(report, null, 2) };
		if (report.breaking) MessageBox.error(text, options);
		else MessageBox.warning(text, options);
	}

	// ---------------------------------------------------------------- actions

	public async onEnabledChange(event: Switch$ChangeEvent): Promise<void> {
		const name = this.selected();
		if (!name) return;
		const enabled = Boolean(event.getParameter("state"));
		try {
			await this.api.bound(name, "setEnabled", { enabled });
			MessageToast.show(this.text("enabledChanged", [name, this.text(enabled ? "enabledWord" : "disabledWord")]));
		} catch (error) {
			this.showError(error);
		}
		await this.poller().poll();
	}

	public onOpenStart(): void {
		if (!this.valueHelpsResumed) {
			// the value helps load when first needed
			for (const id of ["startMode", "startTrigger"]) (this.control<Select>(id).getBinding("items") as ODataListBinding).resume();
			this.valueHelpsResumed = true;
		}
		this.ui().setProperty("/start", { mode: "", trigger: "manual", async: true });
		this.control<Dialog>("startDialog").open();
	}

	public onCloseDialog(event: Event): void {
		((event.getSource() as Control).getParent() as Dialog).close();
	}

	public async onStart(): Promise<void> {
		const name = this.selected();
		this.control<Dialog>("startDialog").close();
		if (!name) return;
		const { mode, trigger, async } = this.ui().getProperty("/start") as { mode: string; trigger: string; async: boolean };
		const running = this.api.bound(name, "start", { mode: mode || undefined, trigger: trigger || undefined, async });
		// a synchronous run: show it as running while it goes on
		if (!async) setTimeout(() => void this.poller().poll(), 300);
		try {
			const result = await running;
			const s = (result.statistics ?? {}) as { created?: number; updated?: number; unchanged?: number; deleted?: number };
			MessageToast.show(async ? this.text("runStarted", [result.runId, name]) : this.text("runFinished", [name, s.created ?? 0, s.updated ?? 0, s.unchanged ?? 0, s.deleted ?? 0]));
		} catch (error) {
			this.showError(error);
		}
		await this.poller().poll();
	}

	public onFlush(): void {
		const name = this.selected();
		if (!name) return;
		MessageBox.confirm(this.text("flushConfirm", [name]), {
			emphasizedAction: MessageBox.Action.OK,
			onClose: (action: string | null) => {
				if (action === MessageBox.Action.OK) void this.flush(name);
			}
		});
	}

	private async flush(name: string): Promise<void> {
		try {
			await this.api.unbound("flush", { name });
			MessageToast.show(this.text("flushDone", [name]));
		} catch (error) {
			this.showError(error);
		}
		await this.poller().poll();
	}

	public onOpenSchedule(): void {
		this.ui().setProperty("/scheduleForm", { every: 10, unit: "60000", engine: "spawn", cron: "" });
		this.control<Dialog>("scheduleDialog").open();
	}

	public async onSetSchedule(): Promise<void> {
		const name = this.selected();
		this.control<Dialog>("scheduleDialog").close();
		if (!name) return;
		const form = this.ui().getProperty("/scheduleForm") as { every: number; unit: string; engine: string; cron: string };
		try {
			const row = await this.api.bound(name, "setSchedule", {
				every: form.cron ? undefined : Math.round(Number(form.every) * Number(form.unit)),
				cron: form.cron || undefined,
				engine: form.engine
			});
			MessageToast.show(this.text("scheduleSet", [name, row.schedule]));
		} catch (error) {
			this.showError(error);
		}
		this.ui().setProperty("/configReload", Date.now());
		await this.poller().poll();
	}

	public async onClearSchedule(): Promise<void> {
		const name = this.selected();
		if (!name) return;
		try {
			await this.api.bound(name, "clearSchedule");
			MessageToast.show(this.text("scheduleCleared", [name]));
		} catch (error) {
			this.showError(error);
		}
		this.ui().setProperty("/configReload", Date.now());
		await this.poller().poll();
	}

	public onOpenInspector(): void {
		const name = this.selected();
		if (name) this.router().navTo("inspect", { name });
	}
}
