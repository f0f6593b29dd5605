import type Page from "sap/m/Page";
import type ODataContextBinding from "sap/ui/model/odata/v4/ODataContextBinding";
import type { Route$PatternMatchedEvent } from "sap/ui/core/routing/Route";
import Base from "./Base";

/**
 * One run (`#/pipelines/{name}/runs/{runId}`): its fields, refreshed by the poll while shown.
 *
 * @namespace pipeline.console.controller
 */
export default class Run extends Base {
	public onInit(): void {
		this.router().getRoute("run")?.attachPatternMatched((event: Route$PatternMatchedEvent) => {
			const { runId } = event.getParameter("arguments") as { name: string; runId: string };
			this.ui().setProperty("/run", runId);
			this.control<Page>("runPage").bindElement({ path: `/PipelineRuns(${encodeURIComponent(runId)})` });
		});
		void this.component().ready().then(permissions => {
			if (permissions.view) this.poller().register("run", () => this.ui().getProperty("/route") === "run"
				? (this.control<Page>("runPage").getElementBinding() as ODataContextBinding | undefined)?.requestRefresh().catch(() => undefined) : undefined);
		});
	}

	public onBack(): void {
		const name = this.selected();
		if (name) this.router().navTo("pipeline", { name, tab: "runs" });
		else this.router().navTo("home");
	}
}
