import Controller from "sap/ui/core/mvc/Controller";
import type View from "sap/ui/core/mvc/View";
import type JSONModel from "sap/ui/model/json/JSONModel";
import type ODataModel from "sap/ui/model/odata/v4/ODataModel";
import type ODataListBinding from "sap/ui/model/odata/v4/ODataListBinding";
import type ODataContextBinding from "sap/ui/model/odata/v4/ODataContextBinding";
import type Context from "sap/ui/model/odata/v4/Context";
import type ResourceModel from "sap/ui/model/resource/ResourceModel";
import type ResourceBundle from "sap/base/i18n/ResourceBundle";
import Filter from "sap/ui/model/Filter";
import FilterOperator from "sap/ui/model/FilterOperator";
import DateFormat from "sap/ui/core/format/DateFormat";
import formatMessage from "sap/base/strings/formatMessage";
import MessageBox from "sap/m/MessageBox";
import MessageToast from "sap/m/MessageToast";
import Table from "sap/m/Table";
import Column from "sap/m/Column";
import ColumnListItem from "sap/m/ColumnListItem";
import Text from "sap/m/Text";
import type Dialog from "sap/m/Dialog";
import type Page from "sap/m/Page";
import type Select from "sap/m/Select";
import type Event from "sap/ui/base/Event";
import type Control from "sap/ui/core/Control";
import type { ListBase$SelectionChangeEvent } from "sap/m/ListBase";
import type { SearchField$LiveChangeEvent } from "sap/m/SearchField";
import type { Switch$ChangeEvent } from "sap/m/Switch";
import type { IconTabBar$SelectEvent } from "sap/m/IconTabBar";
import type { FlexibleColumnLayout$StateChangeEvent } from "sap/f/FlexibleColumnLayout";
import Api, { apiError } from "../model/Api";
import { loadPermissions, readable } from "../model/permissions";
import type { GraphData } from "../control/layout";
import { display, number, parseJson, type DriftReport, type FlowData, type InspectorFilter, type InspectResult, type Progress, type RejectsState, type SweepState } from "../model/types";
import { duration, type HistoryRun } from "../control/HistoryChart";
import EventsSection from "../model/events";
import type Configuration from "./Configuration.controller";

/** Poll intervals (SPEC "Limits"): 30 s while no pipeline runs, 3 s while any runs. */
export const POLL_IDLE = 30000;
export const POLL_RUNNING = 3000;
const PREVIEW_ROWS = 10;
/** Runs drawn by the history chart. */
const HISTORY_RUNS = 20;

/**
 * The console: column 1 lists the pipelines and draws the landscape, column 2 shows one
 * pipeline (overview, runs, configuration, data flow, preview), column 3 is the data inspector.
 * Everything goes through DataPipelineManagementService at /pipeline/.
 *
 * @namespace pipeline.console.controller
 */
export default class App extends Controller {
	private api!: Api;
	private pollTimer?: ReturnType<typeof setTimeout>;
	private polling?: Promise<void>;
	private readonly dateFormat = DateFormat.getDateTimeInstance({ style: "medium" });
	private readonly timeFormat = DateFormat.getTimeInstance({ style: "medium" });
	private valueHelpsResumed = false;
	private events!: EventsSection;

	public onInit(): void {
		this.api = new Api(this.odata());
		this.events = new EventsSection(this.odata(), this.ui(), (key, args) => this.text(key, args), () => this.selected());
		this.ui().setProperty("/inspector", this.emptyInspector("target"));
		this.ui().setProperty("/fields", { progress: false, freshness: false });
		this.ui().setProperty("/history", []);
		void this.start();
	}

	/** What the role allows first: a user without a role sends no request the service would refuse. */
	private async start(): Promise<void> {
		const permissions = await loadPermissions(this.odata(), this.getOwnerComponent()!.getModel("perm") as JSONModel, this.bundle());
		if (!permissions.view) return;
		(this.control<Table>("pipelineTable").getBinding("items") as ODataListBinding | undefined)?.resume();
		// first load, then poll; the progress and freshness fields are used when the service has them
		void this.detectFields();
		await this.poll();
	}

	public onExit(): void {
		clearTimeout(this.pollTimer);
	}

	// ---------------------------------------------------------------- helpers

	private odata(): ODataModel {
		return this.getOwnerComponent()!.getModel() as ODataModel;
	}

	private ui(): JSONModel {
		return this.getOwnerComponent()!.getModel("ui") as JSONModel;
	}

	private bundle(): ResourceBundle {
		return (this.getOwnerComponent()!.getModel("i18n") as ResourceModel).getResourceBundle() as ResourceBundle;
	}

	private text(key: string, args: unknown[] = []): string {
		return this.bundle().getText(key, args.map(display)) ?? key;
	}

	private control<T extends Control>(id: string): T {
		return (this.getView() as View).byId(id) as T;
	}

	private selected(): string | null {
		return this.ui().getProperty("/selected") as string | null;
	}

	/** Shows an API error as a readable message (MessageBox with code, status and target). */
	private showError(error: unknown): void {
		const e = readable(apiError(error), (key, args) => this.text(key, args));
		const details = [e.code, e.status ? `HTTP ${e.status}` : "", e.target ? `target: ${e.target}` : ""].filter(Boolean).join(" · ");
		MessageBox.error(e.message, { title: this.text("errorTitle"), details: details || undefined });
	}

	private emptyInspector(side: "source" | "target") {
		return {
			side, top: 50, skip: 0, from: 0, to: 0, hasMore: false, limitedSupport: false,
			capabilities: { source: "", target: "" }, sideCapability: "",
			allColumns: [] as Array<{ name: string; type: string }>, selectedColumns: [] as string[], filters: [] as InspectorFilter[]
		};
	}

	/** Whether the service has the run progress and pipeline freshness fields (the list shows the watermark without them). */
	private async detectFields(): Promise<void> {
		const meta = this.odata().getMetaModel();
		const has = async (path: string): Promise<boolean> => {
			try {
				return Boolean(await meta.requestObject(path));
			} catch {
				return false;
			}
		};
		const [progress, freshness] = await Promise.all([has("/PipelineRuns/processed"), has("/Pipelines/freshness")]);
		this.ui().setProperty("/fields", { progress, freshness });
	}

	// ---------------------------------------------------------------- formatters

	public formatMessage(pattern: string, ...args: unknown[]): string {
		return pattern ? formatMessage(pattern, args.map(display)) : "";
	}

	public formatLastSync(value: string | null): string {
		return value ? this.formatDateTime(value) : this.text("neverRun");
	}

	public formatDateTime(value: string | null): string {
		return value ? this.dateFormat.format(new Date(value)) : "";
	}

	public formatPollInfo(anyRunning: boolean, interval: number): string {
		return this.text(anyRunning ? "pollRunning" : "pollIdle", [Math.round((interval || POLL_IDLE) / 1000)]);
	}

	public formatProgress(pattern: string, progress: Progress | null): string {
		if (!pattern) return "";
		if (!progress) return `${pattern}: ${this.text("progressStarting")}`;
		const total = Math.max(progress.processed, progress.created + progress.updated + progress.deleted);
		const parts = [this.text("progressValue", [number(total), number(progress.created), number(progress.updated), number(progress.deleted)])];
		if (progress.expected !== null) parts.push(this.text("progressOf", [number(total), number(progress.expected), progress.percent ?? 0]));
		if (progress.rate !== null) parts.push(this.text("progressRate", [number(progress.rate)]));
		if (progress.remainingMs !== null && progress.eta) parts.push(this.text("progressEta", [duration(progress.remainingMs), this.timeFormat.format(new Date(progress.eta))]));
		return `${pattern}: ${parts.join(" · ")}`;
	}

	/** The list's last successful run (the watermark before the service had lastSuccess). */
	public formatLastSuccess(lastSuccess: string | null, lastSync: string | null, hasField: boolean): string {
		return this.formatLastSync(hasField ? lastSuccess : lastSync);
	}

	public formatFreshness(freshness: string | null, maxStaleness: number | string | null): string {
		const limit = maxStaleness !== null && maxStaleness !== undefined ? duration(Number(maxStaleness)) : "";
		if (freshness === "stale") return this.text("freshStale", [limit]);
		if (freshness === "fresh") return this.text("freshFresh", [limit]);
		return this.text("freshUnknown");
	}

	public formatStaleTooltip(pattern: string, maxStaleness: number | string | null): string {
		return pattern ? formatMessage(pattern, [maxStaleness !== null && maxStaleness !== undefined ? duration(Number(maxStaleness)) : ""]) : "";
	}

	/** Milliseconds of a run (to now while it runs); null without a start. */
	private static runMs(start: string | null, end: string | null): number | null {
		if (!start) return null;
		const ms = (end ? new Date(end).getTime() : Date.now()) - new Date(start).getTime();
		return Number.isFinite(ms) && ms >= 0 ? ms : null;
	}

	public formatDuration(start: string | null, end: string | null): string {
		const ms = App.runMs(start, end);
		return ms === null ? "" : duration(ms);
	}

	public formatRate(start: string | null, end: string | null, created: unknown, updated: unknown, deleted: unknown): string {
		const ms = App.runMs(start, end);
		if (ms === null) return "";
		const rows = Number(created ?? 0) + Number(updated ?? 0) + Number(deleted ?? 0);
		return number(Math.round(rows / Math.max(ms / 1000, 0.001) * 10) / 10);
	}

	/** A source or target as readable fields: service, entity, kind, delta, paging (the JSON is the tooltip). */
	public formatEndpoint(json: unknown, baseConfig: unknown, overrides: unknown, side: "source" | "target"): string {
		const config = parseJson<Record<string, unknown>>(json);
		if (!config) return display(json);
		const lines: string[] = [];
		if (config.service) lines.push(this.text("fieldService", [config.service]));
		if (config.entity) lines.push(this.text("fieldEntity", [config.entity]));
		const kind = config.kind ?? config.type ?? config.adapter ?? (config.query ? this.text("kindQuery")
			: config.url || config.path ? this.text("kindRest") : config.service ? this.text("kindService") : this.text("kindLocal"));
		lines.push(this.text("fieldKind", [typeof kind === "string" ? kind : display(kind)]));
		if (side === "source") {
			const mode = this.setting(baseConfig, overrides, "mode");
			const delta = this.setting(baseConfig, overrides, "delta") as { mode?: string; field?: string } | undefined;
			lines.push(this.text("fieldDelta", [mode === "full" || !delta ? this.text("deltaFull")
				: delta.field ? this.text("deltaOn", [delta.mode ?? "timestamp", delta.field]) : delta.mode ?? display(delta)]));
			const batch = config.batchSize ?? this.setting(baseConfig, overrides, "source.batchSize");
			lines.push(this.text("fieldPaging", [batch ? this.text("pagingBatch", [number(batch)]) : this.text("pagingDefault")]));
		} else {
			const batch = config.batchSize;
			if (batch) lines.push(this.text("fieldPaging", [this.text("pagingBatch", [number(batch)])]));
		}
		return lines.join("\n");
	}


	public formatDeviations(deviations: FlowData["deviations"] | undefined): string {
		if (!deviations?.length) return "";
		return `${this.text("deviations")}: ${deviations.map(d => `${d.path} = ${display(d.value)} (default ${display(d.default)})`).join("; ")}`;
	}

	/** The effective value of a setting: an override (dotted or nested) over the coded baseConfig. */
	private setting(baseConfig: unknown, overrides: unknown, path: string): unknown {
		const lookup = (object: Record<string, unknown> | null): unknown => {
			if (!object) return undefined;
			if (path in object) return object[path];
			return path.split(".").reduce<unknown>((at, key) => at && typeof at === "object" ? (at as Record<string, unknown>)[key] : undefined, object);
		};
		const override = lookup(parseJson<Record<string, unknown>>(overrides));
		return override !== undefined ? override : lookup(parseJson<Record<string, unknown>>(baseConfig));
	}

	/** The delete strategy as readable text: soft-delete field and action, or the sweep's schedule and maxShare; none. */
	public formatDeletes(baseConfig: unknown, overrides: unknown): string {
		const parts: string[] = [];
		const field = this.setting(baseConfig, overrides, "delta.deletedField");
		if (typeof field === "string" && field) {
			const action = this.setting(baseConfig, overrides, "delta.deletedAction");
			parts.push(this.text("deletesSoft", [field, this.text(action === "flag" ? "deletesSoftFlag" : "deletesSoftDelete")]));
		}
		const sweep = this.setting(baseConfig, overrides, "deletes.sweep");
		if (sweep) {
			const every = typeof sweep === "object" ? (sweep as { every?: unknown }).every : undefined;
			const when = sweep === "always" ? this.text("sweepAlways")
				: typeof every === "number" ? this.text("sweepRuns", [every])
				: typeof every === "string" ? this.text("sweepInterval", [every]) : display(sweep);
			const maxShare = Number(this.setting(baseConfig, overrides, "deletes.maxShare") ?? 0.5);
			const force = this.setting(baseConfig, overrides, "deletes.force") === true;
			parts.push(this.text("deletesSweep", [when, `${Math.round(maxShare * 1000) / 10} %`]) + (force ? this.text("deletesSweepForce") : ""));
		}
		return parts.length ? parts.join("; ") : this.text("deletesNone");
	}

	/** The last sweep row is shown when there was one or the pipeline sweeps. */
	public hasSweep(lastSweep: unknown, baseConfig: unknown, overrides: unknown): boolean {
		return Boolean(lastSweep) || Boolean(this.setting(baseConfig, overrides, "deletes.sweep"));
	}

	public formatSweep(lastSweep: unknown): string {
		const state = parseJson<SweepState>(lastSweep);
		if (!state?.status) return this.text("sweepNever");
		const time = this.formatDateTime(state.time ?? null);
		if (state.status === "failed") return this.text("sweepFailed", [time, number(state.durationMs), state.error ?? ""]);
		return this.text("sweepCompleted", [time, number(state.deleted), number(state.rows), number(state.sourceKeys), number(state.targetKeys), number(state.durationMs)]);
	}

	public sweepState(lastSweep: unknown): string {
		const state = parseJson<SweepState>(lastSweep);
		return state?.status === "failed" ? "Error" : state?.status === "completed" ? "Success" : "None";
	}

	public formatDriftTitle(drift: DriftReport | null): string {
		if (!drift) return "";
		return this.text(drift.breaking ? "driftTitleBreaking" : "driftTitle", [drift.source, drift.basis, drift.policy, this.formatDateTime(drift.checkedAt ?? null)]);
	}

	/** A run's drift cell: "drift (n)" / "breaking drift (n)". */
	public formatRunDrift(drift: unknown): string {
		const report = parseJson<DriftReport>(drift);
		if (!report) return "";
		return this.text(report.breaking ? "runDriftBreaking" : "runDrift", [report.changes?.length ?? 0]);
	}

	public runDriftState(drift: unknown): string {
		const report = parseJson<DriftReport>(drift);
		return !report ? "None" : report.breaking ? "Error" : "Warning";
	}

	public formatDriftMessages(drift: unknown): string {
		return (parseJson<DriftReport>(drift)?.changes ?? []).map(c => c.message).join("\n");
	}

	public formatRecordTooltip(record: unknown, mapped: unknown): string {
		return display(record ?? mapped);
	}

	// ---------------------------------------------------------------- polling

	/** Refreshes the list, the graphs and the open pipeline; then schedules the next poll. */
	private poll(): Promise<void> {
		clearTimeout(this.pollTimer);
		if (this.polling) return this.polling;
		this.polling = (async () => {
			try {
				const name = this.selected();
				await Promise.all([
					this.refreshList(),
					this.loadLandscape(),
					name ? this.refreshDetail(name) : undefined
				]);
			} finally {
				this.polling = undefined;
				const interval = this.ui().getProperty("/anyRunning") ? POLL_RUNNING : POLL_IDLE;
				this.ui().setProperty("/pollInterval", interval);
				this.ui().setProperty("/lastPoll", Date.now());
				this.pollTimer = setTimeout(() => void this.poll(), interval);
			}
		})();
		return this.polling;
	}

	/** Pipelines currently running (all of them, independent of the list's search). */
	private async runningPipelines(): Promise<Set<string>> {
		const binding = this.odata().bindList("/Pipelines", undefined, undefined, new Filter("status", FilterOperator.EQ, "running"), { $select: "name,status,currentRun" }) as ODataListBinding;
		try {
			const contexts = await binding.requestContexts(0, 1000);
			return new Set(contexts.map(c => c.getProperty("name") as string));
		} finally {
			binding.destroy();
		}
	}

	private async refreshList(): Promise<void> {
		const binding = this.control<Table>("pipelineTable").getBinding("items") as ODataListBinding | undefined;
		try {
			const [running] = await Promise.all([this.runningPipelines(), binding?.requestRefresh()]);
			this.ui().setProperty("/anyRunning", running.size > 0);
			this.ui().setProperty("/running", [...running]);
			this.ui().setProperty("/loadError", null);
		} catch (error) {
			this.loadError(error);
		}
	}

	private loadError(error: unknown): void {
		this.ui().setProperty("/loadError", this.text("loadError", [readable(apiError(error), (key, args) => this.text(key, args)).message]));
	}

	private async loadLandscape(): Promise<void> {
		try {
			const data = await this.api.landscape<GraphData>();
			const running = new Set((this.ui().getProperty("/running") ?? []) as string[]);
			for (const node of data.nodes) if (node.kind === "pipeline") node.running = running.has(node.key.replace(/^pipeline:/, ""));
			this.ui().setProperty("/landscape", data);
		} catch (error) {
			this.loadError(error);
		}
	}

	private async refreshDetail(name: string): Promise<void> {
		const binding = this.control<Page>("detailPage").getElementBinding() as ODataContextBinding | undefined;
		const rejects = this.rejectsBinding();
		await Promise.all([
			binding?.requestRefresh().catch(() => undefined),
			rejects && !rejects.isSuspended() ? rejects.requestRefresh().catch(() => undefined) : undefined,
			this.loadFlow(name),
			this.events.refresh(name)
		]);
	}

	public onRefresh(): void {
		void this.poll();
	}

	// ---------------------------------------------------------------- column 1

	public onSearch(event: SearchField$LiveChangeEvent): void {
		const query = (event.getParameter("newValue") ?? (event.getSource() as unknown as { getValue(): string }).getValue() ?? "").trim();
		const binding = this.control<Table>("pipelineTable").getBinding("items") as ODataListBinding;
		binding.filter(query ? new Filter({
			filters: [
				new Filter({ path: "name", operator: FilterOperator.Contains, value1: query, caseSensitive: false }),
				new Filter({ path: "description", operator: FilterOperator.Contains, value1: query, caseSensitive: false })
			],
			and: false
		}) : []);
	}

	public onSelectionChange(event: ListBase$SelectionChangeEvent): void {
		const item = event.getParameter("listItem");
		const name = item?.getBindingContext()?.getProperty("name") as string | undefined;
		if (name) this.select(name);
	}

	public onItemPress(event: Event): void {
		const name = (event.getSource() as Control).getBindingContext()?.getProperty("name") as string | undefined;
		if (name) this.select(name);
	}

	/** Keeps the selected row selected after a refresh re-created the rows. */
	public onListUpdated(): void {
		const table = this.control<Table>("pipelineTable");
		const name = this.selected();
		for (const item of table.getItems()) {
			const isSelected = Boolean(name) && item.getBindingContext()?.getProperty("name") === name;
			if ((item as ColumnListItem).getSelected() !== isSelected) (item as ColumnListItem).setSelected(isSelected);
		}
	}

	public onLandscapeNodePress(event: Event<{ key: string; kind: string }>): void {
		const key = event.getParameter("key");
		if (event.getParameter("kind") === "pipeline" && key) this.select(key.replace(/^pipeline:/, ""));
	}

	private select(name: string): void {
		const changed = this.selected() !== name;
		this.ui().setProperty("/selected", name);
		this.ui().setProperty("/progress", null);
		const page = this.control<Page>("detailPage");
		if (changed || !page.getElementBinding()) page.bindElement({ path: Api.pipelinePath(name) });
		if (this.ui().getProperty("/layout") === "OneColumn") this.ui().setProperty("/layout", "TwoColumnsMidExpanded");
		this.onListUpdated();
		if (changed) {
			this.ui().setProperty("/flow", null);
			this.ui().setProperty("/config", null);
			this.events.clear();
			void this.events.refresh(name);
			this.ui().setProperty("/inspector", this.emptyInspector("target"));
			if (this.ui().getProperty("/layout").startsWith("Three")) this.ui().setProperty("/layout", "TwoColumnsMidExpanded");
			void this.loadFlow(name);
			void this.loadConfig(name);
			this.control<Table>("runsTable").removeSelections(true);
			this.showRejects(name, null);
			const tab = this.control<Control & { getSelectedKey(): string }>("detailTabs").getSelectedKey();
			if (tab === "preview") void this.loadPreview(name);
		}
	}

	public onStateChange(event: FlexibleColumnLayout$StateChangeEvent): void {
		this.ui().setProperty("/maxColumns", event.getParameter("maxColumnsCount"));
	}

	// ---------------------------------------------------------------- column 2

	public onCloseDetail(): void {
		this.ui().setProperty("/layout", "OneColumn");
		this.ui().setProperty("/selected", null);
		this.onListUpdated();
	}

	public onTabSelect(event: IconTabBar$SelectEvent): void {
		const name = this.selected();
		if (!name) return;
		const key = event.getParameter("key");
		if (key === "config") void this.loadConfig(name);
		if (key === "flow") void this.loadFlow(name);
		if (key === "preview") void this.loadPreview(name);
	}

	/** Progress of the active run: the running run's statistics, advanced after every batch. */
	public onRunsUpdated(): void {
		const table = this.control<Table>("runsTable");
		// keeps the run whose rejects are shown selected after a refresh re-created the rows
		const rejects = this.ui().getProperty("/rejects") as RejectsState | undefined;
		for (const item of table.getItems() as ColumnListItem[]) {
			const id = item.getBindingContext()?.getProperty("ID") as string | undefined;
			const isSelected = Boolean(rejects?.run) && id === rejects?.run;
			if (item.getSelected() !== isSelected) item.setSelected(isSelected);
			if (isSelected && !rejects?.runStart) {
				this.ui().setProperty("/rejects/runStart", item.getBindingContext()?.getProperty("startTime") as string);
				this.updateRejectsTitle();
			}
		}
		const contexts = table.getItems().map(i => i.getBindingContext() as Context | null).filter((c): c is Context => Boolean(c));
		const running = contexts.find(c => c.getProperty("status") === "running");
		this.ui().setProperty("/progress", running ? this.progressOf(running) : null);
		this.ui().setProperty("/history", contexts.slice(0, HISTORY_RUNS).reverse().map(c => this.historyRun(c)));
	}

	/** A run's progress; the progress fields are null (unknown) when the service does not have them. */
	private progressOf(run: Context): Progress {
		const numeric = (field: string): number | null => {
			const value = run.getProperty(field) as unknown;
			return value === null || value === undefined || value === "" ? null : Number(value);
		};
		const created = numeric("statistics_created") ?? 0;
		const updated = numeric("statistics_updated") ?? 0;
		const deleted = numeric("statistics_deleted") ?? 0;
		const processed = numeric("processed") ?? created + updated + deleted;
		const expected = numeric("expected");
		const percent = expected === null ? null : numeric("percent") ?? (expected > 0 ? Math.min(100, Math.round(processed / expected * 10000) / 100) : 0);
		const ms = App.runMs(run.getProperty("startTime") as string | null, null);
		const rate = numeric("rowsPerSecond") ?? (ms ? Math.round(processed / Math.max(ms / 1000, 0.001) * 100) / 100 : null);
		const remainingMs = numeric("remainingMs");
		const eta = (run.getProperty("eta") as string | null | undefined) ?? null;
		const parts = [expected === null ? this.text("progressRead", [number(processed)]) : this.text("progressOf", [number(processed), number(expected), percent ?? 0])];
		if (rate !== null) parts.push(this.text("progressRate", [number(rate)]));
		if (remainingMs !== null && eta) parts.push(this.text("progressEta", [duration(remainingMs), this.timeFormat.format(new Date(eta))]));
		return { created, updated, deleted, processed, expected, percent, rate, remainingMs, eta, display: parts.join(" · ") };
	}

	/** A run as the history chart draws it. */
	private historyRun(run: Context): HistoryRun {
		const status = String(run.getProperty("status") ?? "");
		const start = run.getProperty("startTime") as string | null;
		const durationMs = App.runMs(start, run.getProperty("endTime") as string | null) ?? 0;
		const rows = ["statistics_created", "statistics_updated", "statistics_deleted"].reduce((sum, field) => sum + Number(run.getProperty(field) ?? 0), 0);
		return {
			id: String(run.getProperty("ID") ?? ""), status, start: start ?? "", durationMs, rows,
			label: this.text("historyRun", [this.formatDateTime(start), status, duration(durationMs), number(rows)])
		};
	}

	private rejectsBinding(): ODataListBinding | undefined {
		return this.control<Table>("rejectsTable").getBinding("items") as ODataListBinding | undefined;
	}

	/** The rejects table shows the run's rejected records, or the pipeline's open ones (run null). */
	private showRejects(name: string, run: { ID: string; startTime?: string | null } | null): void {
		this.ui().setProperty("/rejects", { name, run: run?.ID ?? null, runStart: run?.startTime ?? null, total: 0, title: "" } satisfies RejectsState);
		this.updateRejectsTitle();
		const binding = this.rejectsBinding();
		if (!binding) return;
		const filters = run
			? [new Filter("run_ID", FilterOperator.EQ, run.ID)]
			: [new Filter("pipeline_name", FilterOperator.EQ, name), new Filter("status", FilterOperator.EQ, "open")];
		binding.filter(new Filter({ filters, and: true }));
		// rejected records hold source data: only PipelineAdmin reads them
		if (binding.isSuspended() && this.getOwnerComponent()!.getModel("perm")!.getProperty("/administer")) binding.resume();
	}

	private updateRejectsTitle(): void {
		const state = this.ui().getProperty("/rejects") as RejectsState;
		const total = number(state.total);
		this.ui().setProperty("/rejects/title", state.run
			? this.text("rejectsOfRun", [this.formatDateTime(state.runStart) || state.run, total])
			: this.text("rejectsOpen", [state.name ?? "", total]));
	}

	public onRejectsUpdated(event: Event<{ total: number }>): void {
		this.ui().setProperty("/rejects/total", event.getParameter("total") ?? 0);
		this.updateRejectsTitle();
	}

	/** Selecting a run shows its rejected records. */
	public onRunSelect(event: ListBase$SelectionChangeEvent): void {
		const name = this.selected();
		const context = event.getParameter("listItem")?.getBindingContext();
		if (!name || !context) return;
		this.showRejects(name, { ID: context.getProperty("ID") as string, startTime: context.getProperty("startTime") as string });
	}

	public onShowOpenRejects(): void {
		const name = this.selected();
		if (!name) return;
		this.control<Table>("runsTable").removeSelections(true);
		this.showRejects(name, null);
	}

	/** The stored record of a reject in full (pretty JSON) in a dialog. */
	public onShowRecord(event: Event): void {
		const context = (event.getSource() as Control).getBindingContext();
		if (!context) return;
		const raw = (context.getProperty("record") ?? context.getProperty("mapped")) as string | null;
		const parsed = parseJson<unknown>(raw);
		const notes = [
			context.getProperty("truncated") ? this.text("recordTruncated") : "",
			!context.getProperty("record") && context.getProperty("mapped") ? this.text("recordMapped") : ""
		].filter(Boolean);
		this.ui().setProperty("/record", {
			// (a title in braces would be taken for a binding)
			title: this.text("recordTitle", [Object.entries(parseJson<Record<string, unknown>>(context.getProperty("recordKey")) ?? {}).map(([k, v]) => `${k} ${display(v)}`).join(", ")]),
			info: [this.text("recordInfo", [context.getProperty("phase"), context.getProperty("error"), context.getProperty("status")]), ...notes].join("\n"),
			json: parsed !== null ? JSON.stringify(parsed, null, 2) : display(raw)
		});
		this.control<Dialog>("recordDialog").open();
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

	/** Replays the pipeline's open rejects (a run of its own) and shows what became of them. */
	public async onReplayRejects(): Promise<void> {
		const name = this.selected();
		if (!name) return;
		const button = this.control<Control & { setBusy(busy: boolean): void }>("replayRejects");
		button.setBusy(true);
		try {
			const result = await this.api.bound(name, "replayRejects");
			const s = (result.statistics ?? {}) as { created?: number; updated?: number; skipped?: number };
			const written = (s.created ?? 0) + (s.updated ?? 0);
			const text = this.text("replayResult", [result.runId, result.status, written, s.created ?? 0, s.updated ?? 0, s.skipped ?? 0]);
			const title = this.text("replayTitle", [name]);
			if (s.skipped) MessageBox.warning(text, { title });
			else MessageBox.success(text, { title });
			this.showRejects(name, { ID: result.runId as string });
		} catch (error) {
			this.showError(error);
		} finally {
			button.setBusy(false);
		}
		await this.poll();
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

	/** The Configuration tab is a nested view with its own controller (typed settings editor). */
	private async loadConfig(name: string): Promise<void> {
		const configuration = this.control<View>("configuration")?.getController() as Configuration | undefined;
		if (!configuration) return;
		configuration.onSaved ??= () => void this.poll();
		// the events section reads the effective events settings of the same configView()
		configuration.onLoaded ??= view => { if (this.selected() === view.name) this.ui().setProperty("/config", view.config); };
		await configuration.showPipeline(name);
	}

	private async loadPreview(name: string): Promise<void> {
		const table = this.control<Table>("previewTable");
		try {
			const result = await this.api.inspect<InspectResult>(name, { side: "target", top: PREVIEW_ROWS, skip: 0 });
			if (this.selected() === name) this.fillTable(table, result);
		} catch (error) {
			this.fillTable(table, { columns: [], rows: [], hasMore: false, limitedSupport: false });
			this.showError(error);
		}
	}

	/** Builds columns and rows of a preview table from an inspectData result. */
	private fillTable(table: Table, result: InspectResult): void {
		table.destroyColumns();
		table.destroyItems();
		for (const column of result.columns) table.addColumn(new Column({ header: new Text({ text: column.name, tooltip: column.type }) }));
		for (const row of result.rows)
			table.addItem(new ColumnListItem({ cells: result.columns.map(c => new Text({ text: display(row[c.name]), wrapping: false, tooltip: display(row[c.name]) || undefined })) }));
	}

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
		await this.poll();
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
		if (async) {
			try {
				const result = await running;
				MessageToast.show(this.text("runStarted", [result.runId, name]));
			} catch (error) {
				this.showError(error);
			}
			await this.poll();
		} else {
			// a synchronous run: show it as running while it goes on
			setTimeout(() => void this.poll(), 300);
			try {
				const result = await running;
				const s = (result.statistics ?? {}) as { created?: number; updated?: number; deleted?: number };
				MessageToast.show(this.text("runFinished", [name, s.created ?? 0, s.updated ?? 0, s.deleted ?? 0]));
			} catch (error) {
				this.showError(error);
			}
			await this.poll();
		}
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
		await this.poll();
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
		await Promise.all([this.poll(), this.loadConfig(name)]);
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
		await Promise.all([this.poll(), this.loadConfig(name)]);
	}

	public onShowRunError(event: Event): void {
		const raw = (event.getSource() as Control).getBindingContext()?.getProperty("error") as string | null;
		let message = raw ?? "";
		let details: string | undefined;
		try {
			const parsed = JSON.parse(message) as { message?: string; code?: string };
			details = JSON.stringify(parsed, null, 2);
			message = parsed.message ?? message;
		} catch {
			/* plain text */
		}
		MessageBox.error(message, { title: this.text("runErrorTitle"), details });
	}

	// ---------------------------------------------------------------- column 3

	public async onOpenInspector(): Promise<void> {
		const name = this.selected();
		if (!name) return;
		this.ui().setProperty("/layout", "ThreeColumnsEndExpanded");
		const inspector = this.emptyInspector(this.ui().getProperty("/inspector/side") === "source" ? "source" : "target");
		this.ui().setProperty("/inspector", inspector);
		try {
			const capabilities = await this.api.capabilities<{ source: string; target: string }>(name);
			this.ui().setProperty("/inspector/capabilities", capabilities);
			this.ui().setProperty("/inspector/sideCapability", capabilities[inspector.side]);
		} catch (error) {
			this.showError(error);
		}
		await this.loadInspector();
	}

	public onCloseInspector(): void {
		this.ui().setProperty("/layout", "TwoColumnsMidExpanded");
	}

	public async onSideChange(): Promise<void> {
		const side = this.ui().getProperty("/inspector/side") as "source" | "target";
		const capabilities = this.ui().getProperty("/inspector/capabilities") as { source: string; target: string };
		this.ui().setProperty("/inspector", { ...this.emptyInspector(side), capabilities, sideCapability: capabilities[side] });
		await this.loadInspector();
	}

	public onAddFilter(): void {
		const filters = [...(this.ui().getProperty("/inspector/filters") as InspectorFilter[])];
		const columns = this.ui().getProperty("/inspector/allColumns") as Array<{ name: string }>;
		filters.push({ field: columns[0]?.name ?? "", op: "eq", value: "" });
		this.ui().setProperty("/inspector/filters", filters);
	}

	public onRemoveFilter(event: Event): void {
		const path = (event.getSource() as Control).getBindingContext("ui")?.getPath() ?? "";
		const index = Number(path.split("/").pop());
		const filters = (this.ui().getProperty("/inspector/filters") as InspectorFilter[]).filter((_, i) => i !== index);
		this.ui().setProperty("/inspector/filters", filters);
	}

	public async onApplyInspector(): Promise<void> {
		this.ui().setProperty("/inspector/skip", 0);
		await this.loadInspector();
	}

	public async onPrevPage(): Promise<void> {
		const { skip, top } = this.ui().getProperty("/inspector") as { skip: number; top: number };
		this.ui().setProperty("/inspector/skip", Math.max(0, skip - top));
		await this.loadInspector();
	}

	public async onNextPage(): Promise<void> {
		const { skip, top } = this.ui().getProperty("/inspector") as { skip: number; top: number };
		this.ui().setProperty("/inspector/skip", skip + top);
		await this.loadInspector();
	}

	/** A typed filter value: numbers and booleans as such when the column is not a string. */
	private filterValue(filter: InspectorFilter, columns: Array<{ name: string; type: string }>): unknown {
		const type = columns.find(c => c.name === filter.field)?.type ?? "cds.String";
		const value = filter.value.trim();
		if (value === "null") return null;
		if (/Integer|Decimal|Double|Int\d+/.test(type) && value !== "" && !Number.isNaN(Number(value))) return Number(value);
		if (type === "cds.Boolean" && (value === "true" || value === "false")) return value === "true";
		return filter.value;
	}

	private async loadInspector(): Promise<void> {
		const name = this.selected();
		if (!name) return;
		const state = this.ui().getProperty("/inspector") as ReturnType<App["emptyInspector"]>;
		const table = this.control<Table>("inspectorTable");
		const top = Math.min(200, Math.max(1, Math.round(Number(state.top) || 50)));
		// a filter row without a value is not applied (`null` filters for empty values)
		const filters = state.filters.filter(f => f.field && f.value.trim() !== "").map(f => ({ field: f.field, op: f.op, value: this.filterValue(f, state.allColumns) }));
		table.setBusy(true);
		try {
			const result = await this.api.inspect<InspectResult>(name, {
				side: state.side,
				columnsJson: state.selectedColumns.length ? JSON.stringify(state.selectedColumns) : undefined,
				filters: filters.length ? JSON.stringify(filters) : undefined,
				top,
				skip: state.skip
			});
			if (this.selected() !== name) return;
			if (!state.selectedColumns.length && result.columns.length) this.ui().setProperty("/inspector/allColumns", result.columns);
			this.ui().setProperty("/inspector/top", top);
			this.ui().setProperty("/inspector/hasMore", result.hasMore);
			this.ui().setProperty("/inspector/limitedSupport", result.limitedSupport);
			this.ui().setProperty("/inspector/from", result.rows.length ? state.skip + 1 : 0);
			this.ui().setProperty("/inspector/to", state.skip + result.rows.length);
			this.fillTable(table, result);
		} catch (error) {
			this.showError(error);
		} finally {
			table.setBusy(false);
		}
	}
}
