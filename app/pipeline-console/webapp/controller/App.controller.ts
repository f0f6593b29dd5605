import type FlexibleColumnLayout from "sap/f/FlexibleColumnLayout";
import type { FlexibleColumnLayout$StateChangeEvent } from "sap/f/FlexibleColumnLayout";
import type { Router$RouteMatchedEvent } from "sap/ui/core/routing/Router";
import Base from "./Base";

/** Which column layout and pages each route shows. */
const LAYOUTS: Record<string, { layout: string; begin: string; mid?: string }> = {
	home: { layout: "OneColumn", begin: "list" },
	runs: { layout: "OneColumn", begin: "runsOverview" },
	landscape: { layout: "OneColumn", begin: "list" },
	pipeline: { layout: "TwoColumnsMidExpanded", begin: "list", mid: "detail" },
	run: { layout: "TwoColumnsMidExpanded", begin: "list", mid: "run" },
	inspect: { layout: "ThreeColumnsEndExpanded", begin: "list", mid: "detail" }
};

/**
 * The shell: the FlexibleColumnLayout. Each route sets the layout and the pages of the columns;
 * the views themselves react to their routes (List, Detail, Run, Inspector, Runs, Landscape).
 *
 * @namespace pipeline.console.controller
 */
export default class App extends Base {
	public onInit(): void {
		this.router().attachRouteMatched((event: Router$RouteMatchedEvent) => this.show(event.getParameter("name") ?? "home"));
	}

	private show(route: string): void {
		const target = LAYOUTS[route] ?? LAYOUTS.home;
		const fcl = this.control<FlexibleColumnLayout>("fcl");
		const id = (local: string) => this.getView()!.createId(local);
		if (fcl.getCurrentBeginColumnPage()?.getId() !== id(target.begin)) fcl.toBeginColumnPage(id(target.begin), "show", {}, {});
		if (target.mid && fcl.getCurrentMidColumnPage()?.getId() !== id(target.mid)) fcl.toMidColumnPage(id(target.mid), "show", {}, {});
		this.ui().setProperty("/route", route);
		this.ui().setProperty("/layout", target.layout);
		// three columns: tabs and buttons as icons, so none hides under "More" and the title stays whole
		this.ui().setProperty("/compact", target.layout.startsWith("Three"));
		if (!target.mid) this.ui().setProperty("/selected", null);
	}

	public onStateChange(event: FlexibleColumnLayout$StateChangeEvent): void {
		this.ui().setProperty("/maxColumns", event.getParameter("maxColumnsCount"));
	}
}
