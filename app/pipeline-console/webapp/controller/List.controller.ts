import type Table from "sap/m/Table";
import type ColumnListItem from "sap/m/ColumnListItem";
import type ODataListBinding from "sap/ui/model/odata/v4/ODataListBinding";
import type Event from "sap/ui/base/Event";
import type Control from "sap/ui/core/Control";
import type { ListBase$SelectionChangeEvent } from "sap/m/ListBase";
import type { SearchField$LiveChangeEvent } from "sap/m/SearchField";
import Filter from "sap/ui/model/Filter";
import FilterOperator from "sap/ui/model/FilterOperator";
import { apiError } from "../model/Api";
import { readable } from "../model/permissions";
import { POLL_IDLE } from "../model/Poller";
import * as format from "../model/format";
import Base from "./Base";


/** The fields whose change anywhere (a run started by another client) refreshes the list at once. */
const WATCHED = "name,status,lastSync,errorCount,currentRun";

/**
 * Column 1: the pipelines (search, selection, status badges). Starts the poll once the role allows
 * viewing; the list refreshes on every poll and as soon as the watch sees a pipeline change.
 *
 * @namespace pipeline.console.controller
 */
export default class List extends Base {
	private signature?: Map<string, string>;

	public onInit(): void {
		this.ui().setProperty("/fields", { progress: false, freshness: false });
		void this.start();
	}

	private async start(): Promise<void> {
		const permissions = await this.component().ready();
		if (!permissions.view) return;
		(this.table().getBinding("items") as ODataListBinding | undefined)?.resume();
		void this.detectFields();
		this.poller().register("list", () => this.refreshList());
		this.poller().registerOnChange("rows", () => (this.table().getBinding("items") as ODataListBinding | undefined)?.requestRefresh());
		this.ui().bindProperty("/selected").attachChange(() => this.onListUpdated());
		await this.poller().start(() => this.changed());
	}

	private table(): Table {
		return this.control<Table>("pipelineTable");
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

	public formatPollInfo(anyRunning: boolean, interval: number): string {
		return this.text(anyRunning ? "pollRunning" : "pollIdle", [Math.round((interval || POLL_IDLE) / 1000)]);
	}

	/** The list's last successful run (the watermark before the service had lastSuccess), relative: "3 minutes ago". */
	public formatLastSuccess(lastSuccess: string | null, lastSync: string | null, hasField: boolean, _tick?: unknown): string {
		const value = hasField ? lastSuccess : lastSync;
		return value ? format.relative(value) : this.text("neverRun");
	}

	/** The same, short ("3 min. ago"): under the badges while the detail is open. */
	public formatLastSuccessShort(lastSuccess: string | null, lastSync: string | null, hasField: boolean, _tick?: unknown): string {
		const value = hasField ? lastSuccess : lastSync;
		return value ? format.relative(value, Date.now(), "narrow") : this.text("neverRun");
	}

	/** The tooltip of the last run: its absolute time with the time zone, and the watermark. */
	public formatLastRunTooltip(lastSuccess: string | null, lastSync: string | null, hasField: boolean): string {
		const value = hasField ? lastSuccess : lastSync;
		return this.text("lastRunTooltip", [value ? format.absolute(value) : this.text("neverRun"), lastSync ? format.absolute(lastSync) : this.text("neverRun")]);
	}

	/** Status and last run of every pipeline (a few bytes each): the pipelines changed since the last look. */
	private async changed(): Promise<string[]> {
		const binding = this.odata().bindList("/Pipelines", undefined, undefined, undefined, { $select: WATCHED }) as ODataListBinding;
		try {
			const contexts = await binding.requestContexts(0, 1000);
			const signature = new Map(contexts.map(c => [c.getProperty("name") as string, JSON.stringify(WATCHED.split(",").map(field => c.getProperty(field) as unknown))]));
			const before = this.signature;
			this.signature = signature;
			return before ? [...signature].filter(([name, value]) => before.get(name) !== value).map(([name]) => name) : [];
		} finally {
			binding.destroy();
		}
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
		const binding = this.table().getBinding("items") as ODataListBinding | undefined;
		try {
			const [running] = await Promise.all([this.runningPipelines(), binding?.requestRefresh()]);
			this.ui().setProperty("/anyRunning", running.size > 0);
			this.ui().setProperty("/running", [...running]);
			this.ui().setProperty("/loadError", null);
			void this.changed().catch(() => undefined); // the watch compares with what the list shows now
		} catch (error) {
			this.ui().setProperty("/loadError", this.text("loadError", [readable(apiError(error), this.t).message]));
		}
	}

	public onRefresh(): void {
		void this.poller().poll();
	}

	public onAllRuns(): void {
		this.router().navTo("runs");
	}

	public onSearch(event: SearchField$LiveChangeEvent): void {
		const query = (event.getParameter("newValue") ?? (event.getSource() as unknown as { getValue(): string }).getValue() ?? "").trim();
		const binding = this.table().getBinding("items") as ODataListBinding;
		binding.filter(query ? new Filter({
			filters: [
				new Filter({ path: "name", operator: FilterOperator.Contains, value1: query, caseSensitive: false }),
				new Filter({ path: "description", operator: FilterOperator.Contains, value1: query, caseSensitive: false })
			],
			and: false
		}) : []);
	}

	public onSelectionChange(event: ListBase$SelectionChangeEvent): void {
		const name = event.getParameter("listItem")?.getBindingContext()?.getProperty("name") as string | undefined;
		if (name) this.open(name);
	}

	public onItemPress(event: Event): void {
		const name = (event.getSource() as Control).getBindingContext()?.getProperty("name") as string | undefined;
		if (name) this.open(name);
	}

	/** Opens a pipeline on the tab shown now (a URL of its own). */
	private open(name: string): void {
		const route = this.ui().getProperty("/route") as string | undefined;
		const tab = route === "pipeline" && this.selected() ? this.ui().getProperty("/tab") as string : undefined;
		this.router().navTo("pipeline", { name, tab: tab && tab !== "overview" ? tab : undefined });
	}

	/** Keeps the selected row selected after a refresh re-created the rows. */
	public onListUpdated(): void {
		const name = this.selected();
		for (const item of this.table().getItems() as ColumnListItem[]) {
			const isSelected = Boolean(name) && item.getBindingContext()?.getProperty("name") === name;
			if (item.getSelected() !== isSelected) item.setSelected(isSelected);
		}
	}
}
