import type Event from "sap/ui/base/Event";
import type Panel from "sap/m/Panel";
import type { GraphData } from "../control/layout";
import Api, { apiError } from "../model/Api";
import { readable } from "../model/permissions";
import Base from "./Base";

/**
 * The landscape graph (in column 1 under the list; `#/landscape` scrolls to it): every pipeline with
 * its sources and targets, redrawn on every poll.
 *
 * @namespace pipeline.console.controller
 */
export default class Landscape extends Base {
	public onInit(): void {
		void this.component().ready().then(permissions => {
			if (!permissions.view) return;
			this.poller().register("landscape", () => this.load());
		});
		this.router().getRoute("landscape")?.attachPatternMatched(() => {
			const panel = this.control<Panel>("landscapePanel");
			panel.setExpanded(true);
			setTimeout(() => panel.getDomRef()?.scrollIntoView({ block: "start" }), 0);
		});
	}

	private async load(): Promise<void> {
		try {
			const data = await new Api(this.odata()).landscape<GraphData>();
			const running = new Set((this.ui().getProperty("/running") ?? []) as string[]);
			for (const node of data.nodes) if (node.kind === "pipeline") node.running = running.has(node.key.replace(/^pipeline:/, ""));
			this.ui().setProperty("/landscape", data);
		} catch (error) {
			this.ui().setProperty("/loadError", this.text("loadError", [readable(apiError(error), this.t).message]));
		}
	}

	public onLandscapeNodePress(event: Event<{ key: string; kind: string }>): void {
		const key = event.getParameter("key");
		if (event.getParameter("kind") === "pipeline" && key) this.router().navTo("pipeline", { name: key.replace(/^pipeline:/, "") });
	}
}
