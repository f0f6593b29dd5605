import type Table from "sap/m/Table";
import type Event from "sap/ui/base/Event";
import type Control from "sap/ui/core/Control";
import type ODataListBinding from "sap/ui/model/odata/v4/ODataListBinding";
import Base from "./Base";

/**
 * `#/runs`: the newest runs of all pipelines (a run opens its page); refreshed by the poll while shown.
 *
 * @namespace pipeline.console.controller
 */
export default class Runs extends Base {
	public onInit(): void {
		this.router().getRoute("runs")?.attachPatternMatched(() => {
			const binding = this.binding();
			if (binding?.isSuspended()) binding.resume();
			else void binding?.requestRefresh();
		});
		void this.component().ready().then(permissions => {
			if (permissions.view) this.poller().register("runs", () => {
				const binding = this.binding();
				return this.ui().getProperty("/route") === "runs" && binding && !binding.isSuspended() ? binding.requestRefresh() : undefined;
			});
		});
	}

	private binding(): ODataListBinding | undefined {
		return this.control<Table>("allRunsTable").getBinding("items") as ODataListBinding | undefined;
	}

	public onRunPress(event: Event): void {
		const context = (event.getSource() as Control).getBindingContext();
		const name = context?.getProperty("pipeline_name") as string | undefined;
		const runId = context?.getProperty("ID") as string | undefined;
		if (name && runId) this.router().navTo("run", { name, runId });
	}

	public onBack(): void {
		this.router().navTo("home");
	}
}
