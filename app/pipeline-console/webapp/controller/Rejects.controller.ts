import type Table from "sap/m/Table";
import type Dialog from "sap/m/Dialog";
import type Event from "sap/ui/base/Event";
import type Control from "sap/ui/core/Control";
import type ODataListBinding from "sap/ui/model/odata/v4/ODataListBinding";
import Filter from "sap/ui/model/Filter";
import FilterOperator from "sap/ui/model/FilterOperator";
import MessageBox from "sap/m/MessageBox";
import Api from "../model/Api";
import { dateTime } from "../model/format";
import { display, number, parseJson, type RejectsState } from "../model/types";
import Base from "./Base";

/**
 * The rejected records under the runs table: of the run selected there (ui>/rejectsRun), or the
 * pipeline's open ones; replay and the stored record in full. Only PipelineAdmin reads them.
 *
 * @namespace pipeline.console.controller
 */
export default class Rejects extends Base {
	public onInit(): void {
		this.ui().bindProperty("/rejectsRun").attachChange(() => {
			const target = this.ui().getProperty("/rejectsRun") as { name: string; run: { ID: string; startTime?: string | null } | null } | null;
			if (target) this.show(target.name, target.run);
		});
		this.ui().bindProperty("/rejectsRunStart").attachChange(() => {
			this.ui().setProperty("/rejects/runStart", this.ui().getProperty("/rejectsRunStart"));
			this.updateTitle();
		});
		void this.component().ready().then(permissions => {
			if (permissions.view) this.poller().register("rejects", () => {
				const binding = this.binding();
				return binding && !binding.isSuspended() && this.selected() ? binding.requestRefresh().catch(() => undefined) : undefined;
			});
		});
	}

	private binding(): ODataListBinding | undefined {
		return this.control<Table>("rejectsTable").getBinding("items") as ODataListBinding | undefined;
	}

	private show(name: string, run: { ID: string; startTime?: string | null } | null): void {
		this.ui().setProperty("/rejects", { name, run: run?.ID ?? null, runStart: run?.startTime ?? null, total: 0, title: "" } satisfies RejectsState);
		this.updateTitle();
		const binding = this.binding();
		if (!binding) return;
		const filters = run
			? [new Filter("run_ID", FilterOperator.EQ, run.ID)]
			: [new Filter("pipeline_name", FilterOperator.EQ, name), new Filter("status", FilterOperator.EQ, "open")];
		binding.filter(new Filter({ filters, and: true }));
		// rejected records hold source data: only PipelineAdmin reads them
		if (binding.isSuspended() && this.perm().getProperty("/administer")) binding.resume();
	}

	private updateTitle(): void {
		const state = this.ui().getProperty("/rejects") as RejectsState | null;
		if (!state) return;
		const total = number(state.total);
		this.ui().setProperty("/rejects/title", state.run
			? this.text("rejectsOfRun", [dateTime(state.runStart) || state.run, total])
			: this.text("rejectsOpen", [state.name ?? "", total]));
	}

	public onRejectsUpdated(event: Event<{ total: number }>): void {
		this.ui().setProperty("/rejects/total", event.getParameter("total") ?? 0);
		this.updateTitle();
	}

	public formatRecordTooltip(record: unknown, mapped: unknown): string {
		return display(record ?? mapped);
	}

	public onShowOpenRejects(): void {
		const name = this.selected();
		if (name) this.ui().setProperty("/rejectsRun", { name, run: null });
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

	public onCloseDialog(event: Event): void {
		((event.getSource() as Control).getParent() as Dialog).close();
	}

	/** Replays the pipeline's open rejects (a run of its own) and shows what became of them. */
	public async onReplayRejects(): Promise<void> {
		const name = this.selected();
		if (!name) return;
		const button = this.control<Control & { setBusy(busy: boolean): void }>("replayRejects");
		button.setBusy(true);
		try {
			const result = await new Api(this.odata()).bound(name, "replayRejects");
			const s = (result.statistics ?? {}) as { created?: number; updated?: number; skipped?: number };
			const written = (s.created ?? 0) + (s.updated ?? 0);
			const text = this.text("replayResult", [result.runId, result.status, written, s.created ?? 0, s.updated ?? 0, s.skipped ?? 0]);
			const title = this.text("replayTitle", [name]);
			if (s.skipped) MessageBox.warning(text, { title });
			else MessageBox.success(text, { title });
			this.ui().setProperty("/rejectsRun", { name, run: { ID: result.runId as string } });
		} catch (error) {
			this.showError(error);
		} finally {
			button.setBusy(false);
		}
		await this.poller().poll();
	}
}
