import type Table from "sap/m/Table";
import type Event from "sap/ui/base/Event";
import type Control from "sap/ui/core/Control";
import type ODataListBinding from "sap/ui/model/odata/v4/ODataListBinding";
import type { Route$PatternMatchedEvent } from "sap/ui/core/routing/Route";
import Sorter from "sap/ui/model/Sorter";
import { runFilters, timelineData, toQuery, fromQuery, type RunsQuery, type RunsFilter } from "../model/runsFilter";
import { windowStart } from "../model/format";
import Base from "./Base";

/** At most this many runs are drawn in the timeline (the newest of the window). */
const TIMELINE_MAX = 500;

/**
 * `#/runs?status=&trigger=&pipeline=&since=`: the runs of all pipelines, filtered on the server
 * ($filter on PipelineRuns, paged by the table's growing), the filters in the URL (reload and
 * back restore them), and a timeline of the window's runs; a run opens its page. Refreshed by the
 * poll while shown.
 *
 * @namespace pipeline.console.controller
 */
export default class Runs extends Base {
	/** The filter the table's binding has (a change filters, the same one refreshes). */
	private applied?: string;
	/** Drops a timeline answer a newer request overtook. */
	private timelineRequest = 0;
	private pipelinesLoaded = false;

	public onInit(): void {
		this.ui().setProperty("/runsFilter", { ...fromQuery({}), pipelines: [] });
		this.ui().setProperty("/timeline", null);
		this.router().getRoute("runs")?.attachPatternMatched((event: Route$PatternMatchedEvent) => {
			const args = event.getParameter("arguments") as { "?query"?: RunsQuery } | undefined;
			this.apply(fromQuery(args?.["?query"] ?? {}));
		});
		void this.component().ready().then(permissions => {
			if (permissions.view) this.poller().register("runs", () => {
				const binding = this.binding();
				if (this.ui().getProperty("/route") !== "runs" || !binding || binding.isSuspended()) return undefined;
				return Promise.all([binding.requestRefresh(), this.loadTimeline()]);
			});
		});
	}

	private binding(): ODataListBinding | undefined {
		return this.control<Table>("allRunsTable").getBinding("items") as ODataListBinding | undefined;
	}

	private filter(): RunsFilter {
		return this.ui().getProperty("/runsFilter") as RunsFilter;
	}

	/** Shows the filter of the URL: the selects, the table's $filter, the timeline. */
	private apply(filter: Omit<RunsFilter, "pipelines">): void {
		this.ui().setProperty("/runsFilter", { ...this.filter(), ...filter, customValid: true });
		void this.loadPipelines();
		const binding = this.binding();
		if (!binding) return;
		const key = JSON.stringify(toQuery(filter));
		if (key !== this.applied) {
			this.applied = key;
			binding.filter(runFilters(filter));
		} else if (!binding.isSuspended()) {
			void binding.requestRefresh();
		}
		if (binding.isSuspended()) binding.resume();
		void this.loadTimeline();
	}

	/** The names for the pipeline select (once; a pipeline added later is in the URL all the same). */
	private async loadPipelines(): Promise<void> {
		if (this.pipelinesLoaded) return;
		this.pipelinesLoaded = true;
		const binding = this.odata().bindList("/Pipelines", undefined, [new Sorter("name")], [], { $select: "name" });
		try {
			const contexts = await binding.requestContexts(0, 1000);
			const names = contexts.map(context => String(context.getProperty("name")));
			this.ui().setProperty("/runsFilter/pipelines", [{ key: "", text: this.text("allPipelines") }, ...names.map(name => ({ key: name, text: name }))]);
		} catch (error) {
			this.pipelinesLoaded = false;
			this.showError(error);
		} finally {
			binding.destroy();
		}
	}

	/** The newest runs of the filter's window, drawn by the timeline (from the window's start to now). */
	private async loadTimeline(): Promise<void> {
		const request = ++this.timelineRequest;
		const filter = this.filter();
		const binding = this.odata().bindList("/PipelineRuns", undefined, [new Sorter("startTime", true)], runFilters(filter),
			{ $select: "ID,pipeline_name,status,trigger,startTime,endTime" });
		try {
			const contexts = await binding.requestContexts(0, TIMELINE_MAX);
			if (request !== this.timelineRequest) return;
			const runs = contexts.map(context => context.getObject() as Record<string, string | null>);
			this.ui().setProperty("/timeline", timelineData(this.t, filter, runs, Date.now()));
		} catch (error) {
			if (request === this.timelineRequest) this.showError(error);
		} finally {
			binding.destroy();
		}
	}

	/** A select changed: the filter goes into the URL (a history entry), the route applies it. */
	public onFilterChange(): void {
		const filter = this.filter();
		const valid = filter.window !== "custom" || !filter.custom || windowStart(filter.custom) !== null;
		this.ui().setProperty("/runsFilter/customValid", valid);
		if (valid) this.router().navTo("runs", { "?query": toQuery(filter) });
	}

	public onFilterReset(): void {
		this.router().navTo("runs", { "?query": {} });
	}

	public onRunPress(event: Event): void {
		const context = (event.getSource() as Control).getBindingContext();
		const name = context?.getProperty("pipeline_name") as string | undefined;
		const runId = context?.getProperty("ID") as string | undefined;
		if (name && runId) this.router().navTo("run", { name, runId });
	}

	public onTimelinePress(event: Event<{ pipeline: string; runId: string }>): void {
		const { pipeline, runId } = event.getParameters();
		if (pipeline && runId) this.router().navTo("run", { name: pipeline, runId });
	}

	public onBack(): void {
		this.router().navTo("home");
	}
}
