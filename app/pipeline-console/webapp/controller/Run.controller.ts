import JSONModel from "sap/ui/model/json/JSONModel";
import type ODataContextBinding from "sap/ui/model/odata/v4/ODataContextBinding";
import type Table from "sap/m/Table";
import type { Route$PatternMatchedEvent } from "sap/ui/core/routing/Route";
import Base from "./Base";
import Api, { apiError } from "../model/Api";
import type RunTimeline from "../control/RunTimeline";
import { duration } from "../control/HistoryChart";
import { choices, failureOf, failureText, filterEvents, loadEvents, timelineBars, type EventFilter, type RunEvent } from "../model/runEvents";

/** The fields of the run the page shows. */
const RUN_SELECT = "ID,pipeline_name,status,trigger,mode,startTime,endTime,error,drift,failedAt,statistics_created,statistics_updated,statistics_unchanged,statistics_deleted,statistics_skipped,processed,expected";
const RETRY = "DataPipelineManagementService.retry";

/** The run page's own model ("run"). */
interface RunPageState {
	runId: string | null;
	run: Record<string, unknown> | null;
	active: boolean;
	events: RunEvent[];
	shown: RunEvent[];
	kinds: Array<{ key: string; text: string }>;
	phases: Array<{ key: string; text: string }>;
	filter: EventFilter;
	bars: unknown[];
	axis: string;
	failure: string;
	failureSeq: number | null;
	count: string;
	retrying: boolean;
}

const EMPTY: RunPageState = {
	runId: null, run: null, active: false, events: [], shown: [], kinds: [], phases: [], filter: { kind: "", phase: "", text: "" },
	bars: [], axis: "", failure: "", failureSeq: null, count: "", retrying: false
};

/**
 * One run (`#/pipelines/{name}/runs/{runId}`): header, the timeline of page reads, mapping and write
 * batches, the event log with filters, and for a failed run a banner naming where it failed with a
 * Retry (operators) and "Show events". Refreshed by the poll while the run is active.
 *
 * @namespace pipeline.console.controller
 */
export default class Run extends Base {
	private readonly model = new JSONModel(structuredClone(EMPTY));

	public onInit(): void {
		this.getView()?.setModel(this.model, "run");
		this.control<RunTimeline>("runTimeline").setProperty("laneLabels", [this.text("laneRead"), this.text("laneMap"), this.text("laneWrite")]);
		this.router().getRoute("run")?.attachPatternMatched((event: Route$PatternMatchedEvent) => {
			const { runId } = event.getParameter("arguments") as { name: string; runId: string };
			this.ui().setProperty("/run", runId);
			if (this.model.getProperty("/runId") !== runId) this.model.setData({ ...structuredClone(EMPTY), runId });
			void this.load(runId);
		});
		void this.component().ready().then(permissions => {
			if (permissions.view) this.poller().register("run", () => {
				const runId = this.model.getProperty("/runId") as string | null;
				// a finished run's events do not change: only an active one is read again
				return this.ui().getProperty("/route") === "run" && runId && this.model.getProperty("/active") ? this.load(runId) : undefined;
			});
		});
	}

	/** Reads the run and its events (the run first: a run that ended since is read with its last events). */
	private async load(runId: string): Promise<void> {
		const binding = this.odata().bindContext(`/PipelineRuns(${encodeURIComponent(runId)})`, undefined, { $select: RUN_SELECT }) as ODataContextBinding;
		try {
			const run = await binding.requestObject() as Record<string, unknown>;
			const events = await loadEvents(this.odata(), runId);
			if (this.model.getProperty("/runId") !== runId) return;
			this.show(run, events);
		} catch (error) {
			if (this.model.getProperty("/runId") !== runId) return;
			// a run just started (Retry, start async) may not be stored yet: the poll asks again
			if (apiError(error).status === 404 && !this.model.getProperty("/run")) {
				this.model.setProperty("/active", true);
				this.ui().setProperty("/anyRunning", true);
			} else this.showError(error);
		} finally {
			binding.destroy();
		}
	}

	private show(run: Record<string, unknown>, events: RunEvent[]): void {
		const active = run.status === "running";
		const failed = run.status === "failed" || Boolean(run.failedAt);
		const first = events.find(e => e.kind === "error") ?? null;
		const failure = failed ? failureOf(run.failedAt as string | null, run.error, first) : null;
		const bars = timelineBars(this.t, events, run.startTime as string | null);
		const end = Math.max(0, ...bars.map(b => b.startMs + b.durationMs));
		const all = this.text("filterAll");
		this.model.setProperty("/run", run);
		this.model.setProperty("/active", active);
		this.model.setProperty("/events", events);
		this.model.setProperty("/kinds", choices(events, "kind", all));
		this.model.setProperty("/phases", choices(events, "phase", all));
		this.model.setProperty("/bars", bars);
		this.model.setProperty("/axis", duration(end));
		this.model.setProperty("/failure", failureText(this.t, failure));
		this.model.setProperty("/failureSeq", failure?.seq ?? null);
		if (active) this.ui().setProperty("/anyRunning", true);
		this.applyFilter();
	}

	/** The log's rows under the current filter. */
	public applyFilter(): void {
		const events = this.model.getProperty("/events") as RunEvent[];
		const shown = filterEvents(events, this.model.getProperty("/filter") as EventFilter);
		this.model.setProperty("/shown", shown);
		this.model.setProperty("/count", this.text("eventsShown", [shown.length, events.length]));
	}

	public onClearFilter(): void {
		this.model.setProperty("/filter", { kind: "", phase: "", text: "" });
		this.applyFilter();
	}

	/** "Show events": the log filtered to the errors, scrolled to and focused on the first. */
	public onShowFailure(): void {
		this.model.setProperty("/filter", { kind: "error", phase: "", text: "" });
		this.applyFilter();
		this.focusRow(this.model.getProperty("/failureSeq") as number | null);
	}

	/** A timeline bar activated: its row in the log (the filter cleared when it hides it). */
	public onTimelineSelect(event: { getParameter(name: "seq"): number }): void {
		const seq = event.getParameter("seq");
		if (!(this.model.getProperty("/shown") as RunEvent[]).some(e => e.seq === seq)) this.onClearFilter();
		this.focusRow(seq);
	}

	private focusRow(seq: number | null): void {
		const table = this.control<Table>("eventTable");
		const focus = () => {
			const items = table.getItems();
			const item = items.find(i => i.getBindingContext("run")?.getProperty("seq") === seq) ?? items[0];
			item?.getDomRef()?.scrollIntoView({ block: "center" });
			item?.focus();
		};
		// the rows are rendered after the binding's change
		setTimeout(focus, 0);
	}

	/** Retry: the failed run again (same pipeline and mode); opens the new run's page. */
	public async onRetry(): Promise<void> {
		const runId = this.model.getProperty("/runId") as string | null;
		const name = (this.model.getProperty("/run/pipeline_name") as string | null) ?? this.selected();
		if (!runId || !name) return;
		this.model.setProperty("/retrying", true);
		try {
			const result = await new Api(this.odata()).invoke(`/PipelineRuns(${encodeURIComponent(runId)})/${RETRY}`, { async: true });
			this.ui().setProperty("/anyRunning", true);
			void this.poller().poll();
			if (result.runId) this.router().navTo("run", { name, runId: String(result.runId) });
		} catch (error) {
			this.showError(error);
		} finally {
			this.model.setProperty("/retrying", false);
		}
	}

	public formatEventTime(value: string | null): string {
		return value ? new Date(value).toLocaleTimeString("en-GB", { hour12: false }) + `.${String(new Date(value).getMilliseconds()).padStart(3, "0")}` : "";
	}

	/** The message, the details JSON and a retry's wait in one cell. */
	public formatEventMessage(message: string | null, details: string | null, waitMs: unknown): string {
		const wait = waitMs === null || waitMs === undefined || waitMs === "" ? "" : this.text("eventWaited", [duration(Number(waitMs))]);
		return [message, details, wait].filter(Boolean).join(" · ");
	}

	public formatMs(value: unknown): string {
		return value === null || value === undefined || value === "" ? "" : duration(Number(value));
	}

	public onBack(): void {
		const name = this.selected();
		if (name) this.router().navTo("pipeline", { name, tab: "runs" });
		else this.router().navTo("home");
	}
}
