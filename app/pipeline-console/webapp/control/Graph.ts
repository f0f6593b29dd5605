import Control from "sap/ui/core/Control";
import type { $ControlSettings } from "sap/ui/core/Control";
import type { MetadataOptions } from "sap/ui/core/Element";
import type RenderManager from "sap/ui/core/RenderManager";
import type { PropertyBindingInfo } from "sap/ui/base/ManagedObject";
import { layout, NODE_HEIGHT, NODE_WIDTH, type GraphData, type Layout } from "./layout";
import { MOVE_KEYS, move, readingOrder, type Spot } from "./roving";
import { escape } from "./svg";

export interface $GraphSettings extends $ControlSettings {
	data?: GraphData | PropertyBindingInfo | `{${string}}`;
	ariaLabel?: string | PropertyBindingInfo;
	emptyText?: string | PropertyBindingInfo;
	nodePress?: (event: unknown) => void;
}


/** Cuts a group title to what fits over its frame (group titles are not focusable). */
const fit = (text: string, max: number): string => text.length > max ? `${text.slice(0, max - 1)}…` : text;

/** The (jQuery) DOM event UI5 hands to a control's event methods. */
interface DomEvent {
	target: EventTarget | null;
	key?: string;
	preventDefault(): void;
}

const STATUS_CLASS: Record<string, string> = { Warning: "pcWarning", Error: "pcError", Success: "pcSuccess" };

/** The word a node's state shows inside the node (besides its colour; the legend explains both). */
const STATE_WORD: Record<string, string> = { failed: "failed", stale: "stale", customized: "customized", drift: "schema drift" };

/** A node's state: the server's `state`, else derived from status and freshness (older servers). */
export function stateOf(node: { state?: string; status?: string; freshness?: string }): string {
	if (node.state && STATE_WORD[node.state]) return node.state;
	if (node.status === "Error") return "failed";
	if (node.freshness === "stale") return "stale";
	return node.status === "Warning" ? "customized" : "";
}

/**
 * A directed graph drawn as SVG with a layered layout: nodes are placed in layers by their
 * longest path from a root (left to right), ordered by group within a layer, and groups are
 * framed. Node states have their own colour and word (failed red, stale violet, customized orange,
 * schema drift teal; GraphLegend explains them); `Warning` lines are orange.
 * The graph is one tab stop: the last focused node (first: the first node) has tabindex 0, the
 * others -1, arrow keys move between nodes (./roving). A node's accessible name is its visible
 * text (title, description, state word); long texts are clipped, not cut, so both stay equal.
 * Enter, Space or a click fires `nodePress` with the node's key.
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

	/** The node that has the tab stop (kept across re-renders, e.g. the console's polls). */
	private activeKey = "";
	/** The laid-out nodes of the last rendering, for the arrow keys. */
	private spots: Spot[] = [];
	private focusInside = false;

	static renderer = {
		apiVersion: 2,
		render(rm: RenderManager, control: Graph): void {
			const data = control.getProperty("data") as GraphData | null;
			rm.openStart("div", control).class("pcGraph");
			rm.attr("role", "group");
			const label = control.getProperty("ariaLabel") as string;
			if (label) rm.attr("aria-label", label);
			if (!data || !data.nodes || !data.nodes.length) {
				control.spots = [];
				rm.openEnd();
				rm.openStart("div").class("pcGraphEmpty").openEnd();
				rm.text(control.getProperty("emptyText") as string);
				rm.close("div");
			} else {
				rm.openEnd();
				const result = layout(data);
				control.spots = result.boxes.map(b => ({ key: b.key, layer: b.layer, y: b.y }));
				if (!control.spots.some(s => s.key === control.activeKey)) control.activeKey = readingOrder(control.spots)[0].key;
				rm.unsafeHtml(Graph.svg(result, { id: control.getId(), active: control.activeKey, pressable: control.hasListeners("nodePress") }));
			}
			rm.close("div");
		}
	};

	/** The SVG markup of a laid-out graph; every text is escaped. */
	static svg(result: Layout, options: { id: string; active: string; pressable: boolean }): string {
		const id = escape(options.id);
		const parts: string[] = [];
		parts.push(`<svg xmlns="http://www.w3.org/2000/svg" class="pcGraphSvg" viewBox="0 0 ${result.width} ${result.height}" width="${result.width}" height="${result.height}" style="max-width:${result.width}px;min-width:${Math.round(result.width * 0.7)}px" role="none">`);
		parts.push(`<defs><marker id="${id}-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="pcArrowHead"/></marker>`
			+ `<clipPath id="${id}-clip"><rect x="4" y="0" width="${NODE_WIDTH - 8}" height="${NODE_HEIGHT}"/></clipPath></defs>`);
		for (const frame of result.frames) {
			parts.push(`<g class="pcGroup"><rect x="${frame.x}" y="${frame.y}" width="${frame.width}" height="${frame.height}" rx="8"/>`
				+ `<text x="${frame.x + 8}" y="${frame.y + 14}">${escape(fit(frame.title, 28))}</text></g>`);
		}
		for (const edge of result.edges) {
			const cls = ["pcLine", STATUS_CLASS[edge.status] ?? ""].join(" ").trim();
			parts.push(`<path class="${cls}" data-from="${escape(edge.from)}" data-to="${escape(edge.to)}" d="${edge.path}" marker-end="url(#${id}-arrow)" aria-hidden="true"/>`);
		}
		// the texts end in a space: the visible text (all texts of the node, joined as they are) then
		// reads as the name does (the labelling texts joined by spaces)
		result.boxes.forEach((node, index) => {
			const state = stateOf(node);
			const cls = ["pcNode", `pcKind-${node.kind}`, STATUS_CLASS[node.status] ?? "", state ? `pcState-${state}` : "", node.running ? "pcRunning" : ""].join(" ").replace(/\s+/g, " ").trim();
			const nodeId = `${id}-n${index}`;
			const sub = node.description ?? node.kind;
			const labelled = [`${nodeId}-t`, `${nodeId}-s`, ...(state ? [`${nodeId}-m`] : [])].join(" ");
			parts.push(`<g id="${nodeId}" class="${cls}" data-key="${escape(node.key)}" data-kind="${escape(node.kind)}" data-state="${state}" tabindex="${node.key === options.active ? 0 : -1}"`
				+ ` role="${options.pressable ? "button" : "img"}" aria-labelledby="${labelled}" transform="translate(${node.x},${node.y})">`
				+ `<title>${escape(`${node.title}, ${sub}`)}</title>`
				+ `<rect width="${node.width}" height="${node.height}" rx="6"/>`
				+ `<text id="${nodeId}-t" class="pcNodeTitle" x="10" y="19" clip-path="url(#${id}-clip)">${escape(node.title)} </text>`
				+ `<text id="${nodeId}-s" class="pcNodeSub" x="10" y="36" clip-path="url(#${id}-clip)">${escape(sub)}${state ? " " : ""}</text>`
				+ (state ? `<text id="${nodeId}-m" class="pcNodeMark" x="10" y="52" clip-path="url(#${id}-clip)">${escape(STATE_WORD[state])}</text>` : "")
				+ `</g>`);
		});
		parts.push("</svg>");
		return parts.join("");
	}

	onBeforeRendering(): void {
		const dom = this.getDomRef();
		this.focusInside = !!dom && dom.contains(document.activeElement);
	}

	onAfterRendering(): void {
		// a re-render (the console polls) keeps the focus on the same node
		if (this.focusInside) this.nodeElement(this.activeKey)?.focus({ preventScroll: true });
		this.focusInside = false;
	}

	/** UI5 restores the focus after a re-render to this element: the node with the tab stop. */
	getFocusDomRef(): Element | null {
		return this.nodeElement(this.activeKey) ?? this.getDomRef();
	}

	private nodeElement(key: string): SVGGElement | null {
		const dom = this.getDomRef();
		if (!dom) return null;
		return [...dom.querySelectorAll<SVGGElement>("g.pcNode")].find(el => el.getAttribute("data-key") === key) ?? null;
	}

	/** Moves the tab stop to `key` (without re-rendering) and focuses it. */
	private activate(key: string, focus: boolean): void {
		const target = this.nodeElement(key);
		if (!target) return;
		this.activeKey = key;
		for (const el of this.getDomRef()?.querySelectorAll("g.pcNode") ?? []) el.setAttribute("tabindex", el === target ? "0" : "-1");
		if (focus) {
			target.focus();
			target.scrollIntoView?.({ block: "nearest", inline: "nearest" });
		}
	}

	onfocusin(event: DomEvent): void {
		const element = event.target instanceof Element ? event.target.closest("g.pcNode") : null;
		const key = element?.getAttribute("data-key");
		if (key && key !== this.activeKey) this.activate(key, false);
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
		if ((event.key === "Enter" || event.key === " ") && this.pressFrom(event.target)) {
			event.preventDefault();
			return;
		}
		if (!event.key || !MOVE_KEYS.has(event.key)) return;
		const from = event.target instanceof Element ? event.target.closest("g.pcNode")?.getAttribute("data-key") : undefined;
		if (!from) return;
		event.preventDefault(); // no scrolling of the container or the page
		const to = move(this.spots, from, event.key);
		if (to) this.activate(to, true);
	}
}
