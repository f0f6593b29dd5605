import Control from "sap/ui/core/Control";
import type { $ControlSettings } from "sap/ui/core/Control";
import type { MetadataOptions } from "sap/ui/core/Element";
import type RenderManager from "sap/ui/core/RenderManager";
import type { PropertyBindingInfo } from "sap/ui/base/ManagedObject";
import { layout, type GraphData, type Layout } from "./layout";
import { escape } from "./svg";

export interface $GraphSettings extends $ControlSettings {
	data?: GraphData | PropertyBindingInfo | `{${string}}`;
	ariaLabel?: string | PropertyBindingInfo;
	emptyText?: string | PropertyBindingInfo;
	nodePress?: (event: unknown) => void;
}


/** Cuts a title to what fits into a node box. */
const fit = (text: string, max: number): string => text.length > max ? `${text.slice(0, max - 1)}…` : text;

/** The (jQuery) DOM event UI5 hands to a control's event methods. */
interface DomEvent {
	target: EventTarget | null;
	key?: string;
	preventDefault(): void;
}

const STATUS_CLASS: Record<string, string> = { Warning: "pcWarning", Error: "pcError", Success: "pcSuccess" };

/**
 * A directed graph drawn as SVG with a layered layout: nodes are placed in layers by their
 * longest path from a root (left to right), ordered by group within a layer, and groups are
 * framed. `Warning` nodes and lines are orange (custom hooks or configuration), `Error` red.
 * Nodes are focusable; Enter, Space or a click fires `nodePress` with the node's key.
 *
 * @namespace pipeline.console.control
 */
export default class Graph extends Control {
	// constructor signatures for TypeScript (the settings object is UI5's)
	constructor(idOrSettings?: string | $GraphSettings);
	constructor(id?: string, settings?: $GraphSettings);
	constructor(id?: string, settings?: $GraphSettings) {
		super(id, settings);
	}

	static readonly metadata: MetadataOptions = {
		properties: {
			/** `{ nodes: [{key,title,kind,group,status,description,running}], lines: [{from,to,status}], groups? }` */
			data: { type: "object", defaultValue: null },
			/** Accessible name of the whole graph. */
			ariaLabel: { type: "string", defaultValue: "" },
			/** Shown when there are no nodes. */
			emptyText: { type: "string", defaultValue: "" }
		},
		events: {
			nodePress: { parameters: { key: { type: "string" }, kind: { type: "string" } } }
		}
	};

	static renderer = {
		apiVersion: 2,
		render(rm: RenderManager, control: Graph): void {
			const data = control.getProperty("data") as GraphData | null;
			rm.openStart("div", control).class("pcGraph");
			// the container scrolls (both ways) and is focusable, so every node can be reached by keyboard too
			rm.attr("role", "group");
			rm.attr("tabindex", "0");
			const label = control.getProperty("ariaLabel") as string;
			if (label) rm.attr("aria-label", label);
			rm.openEnd();
			if (!data || !data.nodes || !data.nodes.length) {
				rm.openStart("div").class("pcGraphEmpty").openEnd();
				rm.text(control.getProperty("emptyText") as string);
				rm.close("div");
			} else {
				rm.unsafeHtml(Graph.svg(layout(data), label));
			}
			rm.close("div");
		}
	};

	/** The SVG markup of a laid-out graph; every text is escaped. */
	static svg(result: Layout, label: string): string {
		const parts: string[] = [];
		parts.push(`<svg xmlns="http://www.w3.org/2000/svg" class="pcGraphSvg" viewBox="0 0 ${result.width} ${result.height}" width="${result.width}" height="${result.height}" style="max-width:${result.width}px;min-width:${Math.round(result.width * 0.7)}px" role="group" aria-label="${escape(label)}">`);
		parts.push(`<defs><marker id="pcArrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="pcArrowHead"/></marker></defs>`);
		for (const frame of result.frames) {
			parts.push(`<g class="pcGroup"><rect x="${frame.x}" y="${frame.y}" width="${frame.width}" height="${frame.height}" rx="8"/>`
				+ `<text x="${frame.x + 8}" y="${frame.y + 14}">${escape(fit(frame.title, 28))}</text></g>`);
		}
		for (const edge of result.edges) {
			const cls = ["pcLine", STATUS_CLASS[edge.status] ?? ""].join(" ").trim();
			parts.push(`<path class="${cls}" data-from="${escape(edge.from)}" data-to="${escape(edge.to)}" d="${edge.path}" marker-end="url(#pcArrow)"/>`);
		}
		for (const node of result.boxes) {
			const cls = ["pcNode", `pcKind-${node.kind}`, STATUS_CLASS[node.status] ?? "", node.running ? "pcRunning" : ""].join(" ").replace(/\s+/g, " ").trim();
			const text = `${node.title}${node.description ? `, ${node.description}` : ""}${node.freshness === "stale" ? (node.description?.includes("stale") ? "" : ", stale") : node.status === "Warning" ? ", customized" : node.status === "Error" ? ", failed" : ""}`;
			parts.push(`<g class="${cls}" data-key="${escape(node.key)}" data-kind="${escape(node.kind)}" tabindex="0" role="button" aria-label="${escape(text)}" transform="translate(${node.x},${node.y})">`
				+ `<title>${escape(text)}</title>`
				+ `<rect width="${node.width}" height="${node.height}" rx="6"/>`
				+ `<text class="pcNodeTitle" x="10" y="20">${escape(fit(node.title, 24))}</text>`
				+ `<text class="pcNodeSub" x="10" y="38">${escape(fit(node.description ?? node.kind, 30))}</text>`
				+ `</g>`);
		}
		parts.push("</svg>");
		return parts.join("");
	}

	private pressFrom(target: EventTarget | null): boolean {
		const element = target instanceof Element ? target.closest("[data-key]") : null;
		if (!element) return false;
		this.fireEvent("nodePress", { key: element.getAttribute("data-key"), kind: element.getAttribute("data-kind") });
		return true;
	}

	onclick(event: DomEvent): void {
		this.pressFrom(event.target);
	}

	onkeydown(event: DomEvent): void {
		if ((event.key === "Enter" || event.key === " ") && this.pressFrom(event.target)) event.preventDefault();
	}
}
