import type Table from "sap/m/Table";
import type Event from "sap/ui/base/Event";
import type Control from "sap/ui/core/Control";
import type { Route$PatternMatchedEvent } from "sap/ui/core/routing/Route";
import Api from "../model/Api";
import { fillTable } from "../model/runs";
import type { InspectorFilter, InspectResult } from "../model/types";
import Base from "./Base";

type Side = "source" | "target";
/** The inspector's query as the URL holds it (`#/pipelines/{name}/inspect?side=…&top=…&skip=…&columns=…&filters=…`). */
interface Query {
	side?: string;
	top?: string;
	skip?: string;
	columns?: string;
	filters?: string;
}

function emptyInspector(side: Side) {
	return {
		side, top: 50, skip: 0, from: 0, to: 0, hasMore: false, limitedSupport: false,
		capabilities: { source: "", target: "" }, sideCapability: "",
		allColumns: [] as Array<{ name: string; type: string }>, selectedColumns: [] as string[], filters: [] as InspectorFilter[]
	};
}
type State = ReturnType<typeof emptyInspector>;

/**
 * Column 3: the data inspector of a pipeline's source or target. Its query (side, columns, filters,
 * page) is in the URL: applying a filter or paging navigates, the route loads.
 *
 * @namespace pipeline.console.controller
 */
export default class Inspector extends Base {
	private api!: Api;
	private capabilitiesOf?: string;

	public onInit(): void {
		this.api = new Api(this.odata());
		this.ui().setProperty("/inspector", emptyInspector("target"));
		this.router().getRoute("inspect")?.attachPatternMatched((event: Route$PatternMatchedEvent) => {
			const args = event.getParameter("arguments") as { name: string; "?query"?: Query };
			void this.open(args.name, args["?query"] ?? {});
		});
	}

	private async open(name: string, query: Query): Promise<void> {
		if (!this.perm().getProperty("/administer")) return; // inspecting data is PipelineAdmin's
		const side: Side = query.side === "source" ? "source" : "target";
		const previous = this.ui().getProperty("/inspector") as State;
		const state: State = { ...emptyInspector(side), capabilities: previous.capabilities, sideCapability: previous.capabilities[side],
			allColumns: previous.side === side && this.capabilitiesOf === name ? previous.allColumns : [] };
		state.top = Math.min(200, Math.max(1, Math.round(Number(query.top) || 50)));
		state.skip = Math.max(0, Math.round(Number(query.skip) || 0));
		state.selectedColumns = query.columns ? query.columns.split(",").filter(Boolean) : [];
		try {
			state.filters = query.filters ? JSON.parse(query.filters) as InspectorFilter[] : [];
		} catch {
			state.filters = [];
		}
		this.ui().setProperty("/inspector", state);
		if (this.capabilitiesOf !== name) {
			try {
				const capabilities = await this.api.capabilities<{ source: string; target: string }>(name);
				this.capabilitiesOf = name;
				this.ui().setProperty("/inspector/capabilities", capabilities);
				this.ui().setProperty("/inspector/sideCapability", capabilities[side]);
			} catch (error) {
				this.showError(error);
			}
		}
		await this.load();
	}

	/** Navigates to the query (a new history entry); loads directly when the URL stays the same. */
	private navigate(change: Partial<State>): void {
		const name = this.selected();
		if (!name) return;
		const state = { ...(this.ui().getProperty("/inspector") as State), ...change };
		const query: Query = { side: state.side, top: String(state.top), skip: String(state.skip) };
		if (state.selectedColumns.length) query.columns = state.selectedColumns.join(",");
		if (state.filters.length) query.filters = JSON.stringify(state.filters);
		const hash = this.router().getURL("inspect", { name, "?query": query }) ?? "";
		if (window.location.hash.replace(/^#\/?/, "") === hash.replace(/^\/?/, "")) void this.open(name, query);
		else this.router().navTo("inspect", { name, "?query": query });
	}

	public onCloseInspector(): void {
		const name = this.selected();
		if (name) this.router().navTo("pipeline", { name, tab: "preview" });
		else this.router().navTo("home");
	}

	public onSideChange(): void {
		this.navigate({ side: this.ui().getProperty("/inspector/side") as Side, skip: 0, selectedColumns: [], filters: [] });
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

	public onApplyInspector(): void {
		this.navigate({ skip: 0 });
	}

	public onPrevPage(): void {
		const { skip, top } = this.ui().getProperty("/inspector") as State;
		this.navigate({ skip: Math.max(0, skip - top) });
	}

	public onNextPage(): void {
		const { skip, top } = this.ui().getProperty("/inspector") as State;
		this.navigate({ skip: skip + top });
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

	private async load(): Promise<void> {
		const name = this.selected();
		if (!name) return;
		const state = this.ui().getProperty("/inspector") as State;
		const table = this.control<Table>("inspectorTable");
		// a filter row without a value is not applied (`null` filters for empty values)
		const filters = state.filters.filter(f => f.field && f.value.trim() !== "").map(f => ({ field: f.field, op: f.op, value: this.filterValue(f, state.allColumns) }));
		table.setBusy(true);
		try {
			const result = await this.api.inspect<InspectResult>(name, {
				side: state.side,
				columnsJson: state.selectedColumns.length ? JSON.stringify(state.selectedColumns) : undefined,
				filters: filters.length ? JSON.stringify(filters) : undefined,
				top: state.top,
				skip: state.skip
			});
			if (this.selected() !== name) return;
			if (!state.selectedColumns.length && result.columns.length) this.ui().setProperty("/inspector/allColumns", result.columns);
			this.ui().setProperty("/inspector/hasMore", result.hasMore);
			this.ui().setProperty("/inspector/limitedSupport", result.limitedSupport);
			this.ui().setProperty("/inspector/from", result.rows.length ? state.skip + 1 : 0);
			this.ui().setProperty("/inspector/to", state.skip + result.rows.length);
			fillTable(table, result);
		} catch (error) {
			this.showError(error);
		} finally {
			table.setBusy(false);
		}
	}
}
