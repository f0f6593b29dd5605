import Control from "sap/ui/core/Control";
import type RenderManager from "sap/ui/core/RenderManager";
import type { MetadataOptions } from "sap/ui/core/Element";
import type { $ControlSettings } from "sap/ui/core/Control";
import type { PropertyBindingInfo } from "sap/ui/base/ManagedObject";
import { MOVE_KEYS, move } from "./roving";
import { escape } from "./svg";

/** The lanes of the timeline: page reads (source), mapping, write batches (target). */
export const LANES = ["read", "map", "write"] as const;
export type Lane = typeof LANES[number];

/** One bar: an event with a duration, placed by its start relative to the run's start. */
export interface TimelineBar {
	/** The event's seq (the log row it stands for). */
	seq: number;
	lane: Lane;
	/** Milliseconds from the run's start to the bar's start. */
	startMs: number;
	durationMs: number;
	failed: boolean;
	/** Accessible name, tooltip and the caption shown while the bar has the focus. */
	label: string;
}

export interface $RunTimelineSettings extends $ControlSettings {
	bars?: TimelineBar[] | PropertyBindingInfo | `{${string}}`;
	laneLabels?: string[] | PropertyBindingInfo | `{${string}}`;
	ariaLabel?: string | PropertyBindingInfo;
	emptyText?: string | PropertyBindingInfo;
	axisText?: string | PropertyBindingInfo;
}

const WIDTH = 720;
const LANE_H = 26;
const LEFT = 56;
const RIGHT = 12;
const TOP = 6;
const BOTTOM = 22;

/**
 * A run's timeline as SVG: one lane each for page reads, mapping and write batches, one bar per
 * event with a duration (failures red). One tab stop: the focused bar has tabindex 0, the others
 * -1; arrow keys, Home and End move the focus (roving tabindex). A bar's accessible name is the
 * caption shown below the chart while it has the focus, so name and visible text are the same.
 *
 * @namespace pipeline.console.control
 */
export default class RunTimeline extends Control {
	constructor(idOrSettings?: string | $RunTimelineSettings);
	constructor(id?: string, settings?: $RunTimelineSettings);
	constructor(id?: string, settings?: $RunTimelineSettings) {
		super(id, settings);
	}

	static readonly metadata: MetadataOptions = {
		properties: {
			bars: { type: "object", defaultValue: null },
			laneLabels: { type: "object", defaultValue: null },
			ariaLabel: { type: "string", defaultValue: "" },
			emptyText: { type: "string", defaultValue: "" },
			axisText: { type: "string", defaultValue: "" }
		},
		events: {
			/** A bar was activated (Enter, Space or click): its event's seq. */
			select: { parameters: { seq: { type: "int" } } }
		}
	};

	/** The bar with the tab stop (kept over re-renderings by the poll). */
	private active = 0;

	static renderer = {
		apiVersion: 2,
		render(rm: RenderManager, control: RunTimeline): void {
			const bars = control.bars();
			rm.openStart("div", control).class("pcChart").class("pcTimeline");
			rm.attr("role", "group");
			const label = control.getProperty("ariaLabel") as string;
			if (label) rm.attr("aria-label", label);
			rm.openEnd();
			if (!bars.length) {
				rm.openStart("div").class("pcGraphEmpty").openEnd();
				rm.text(control.getProperty("emptyText") as string);
				rm.close("div");
			} else {
				const active = Math.min(control.active, bars.length - 1);
				rm.unsafeHtml(RunTimeline.svg(bars, (control.getProperty("laneLabels") ?? [...LANES]) as string[], control.getProperty("axisText") as string, active));
				rm.openStart("div", `${control.getId()}-caption`).class("pcTimelineCaption").attr("aria-hidden", "true").openEnd();
				rm.text(bars[active].label);
				rm.close("div");
			}
			rm.close("div");
		}
	};

	private bars(): TimelineBar[] {
		return (this.getProperty("bars") ?? []) as TimelineBar[];
	}

	static svg(bars: TimelineBar[], laneLabels: string[], axisText: string, active: number): string {
		const plotW = WIDTH - LEFT - RIGHT;
		const height = TOP + LANE_H * LANES.length + BOTTOM;
		const endMs = Math.max(1, ...bars.map(b => b.startMs + b.durationMs));
		const x = (ms: number) => LEFT + (ms / endMs) * plotW;
		const parts: string[] = [`<svg xmlns="http://www.w3.org/2000/svg" class="pcChartSvg" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" style="max-width:${WIDTH}px;min-width:${WIDTH / 2}px">`];
		LANES.forEach((lane, i) => {
			const y = TOP + i * LANE_H;
			parts.push(`<text x="${LEFT - 6}" y="${y + LANE_H / 2 + 4}" text-anchor="end">${escape(laneLabels[i] ?? lane)}</text>`);
			parts.push(`<line class="pcAxis" x1="${LEFT}" y1="${y + LANE_H}" x2="${LEFT + plotW}" y2="${y + LANE_H}"/>`);
		});
		const bottom = TOP + LANE_H * LANES.length;
		parts.push(`<text x="${LEFT}" y="${bottom + 15}">0</text>`);
		parts.push(`<text x="${LEFT + plotW}" y="${bottom + 15}" text-anchor="end">${escape(axisText)}</text>`);
		bars.forEach((bar, i) => {
			const y = TOP + LANES.indexOf(bar.lane) * LANE_H + 4;
			const left = x(bar.startMs);
			const w = Math.max(2, x(bar.startMs + bar.durationMs) - left);
			parts.push(`<g class="pcSpan" data-seq="${bar.seq}" data-lane="${bar.lane}" tabindex="${i === active ? 0 : -1}" role="img" aria-label="${escape(bar.label)}">`
				+ `<title>${escape(bar.label)}</title>`
				+ `<rect class="pcBar pcLane-${bar.lane}${bar.failed ? " pcFailed" : ""}" x="${left.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${LANE_H - 8}"/>`
				+ `</g>`);
		});
		parts.push("</svg>");
		return parts.join("");
	}

	onAfterRendering(): void {
		const dom = this.getDomRef() as HTMLElement | null;
		if (!dom) return;
		dom.onkeydown = (event: KeyboardEvent) => this.onKey(event);
		dom.onclick = (event: MouseEvent) => {
			const index = this.indexOf(event.target);
			if (index >= 0) this.focusBar(index, true);
		};
		// (the root may be kept by DOM patching: the listener is added once per element)
		dom.removeEventListener("focusin", this.onFocusIn);
		dom.addEventListener("focusin", this.onFocusIn);
	}

	private readonly onFocusIn = (event: FocusEvent): void => {
		const index = this.indexOf(event.target);
		if (index >= 0 && index !== this.active) this.focusBar(index, false);
	};

	private spans(): SVGGElement[] {
		return [...(this.getDomRef()?.querySelectorAll<SVGGElement>("g.pcSpan") ?? [])];
	}

	private indexOf(target: EventTarget | null): number {
		const span = (target as Element | null)?.closest?.("g.pcSpan");
		return span ? this.spans().indexOf(span as SVGGElement) : -1;
	}

	/** Moves the tab stop to bar `index` (without re-rendering) and shows its caption. */
	private focusBar(index: number, select: boolean): void {
		const spans = this.spans();
		const bars = this.bars();
		if (!spans[index] || !bars[index]) return;
		spans.forEach((span, i) => span.setAttribute("tabindex", i === index ? "0" : "-1"));
		this.active = index;
		if (document.activeElement !== spans[index]) spans[index].focus();
		const caption = document.getElementById(`${this.getId()}-caption`);
		if (caption) caption.textContent = bars[index].label;
		if (select) this.fireEvent("select", { seq: bars[index].seq });
	}

	private onKey(event: KeyboardEvent): void {
		const count = this.bars().length;
		if (!count || this.indexOf(event.target) < 0) return;
		const active = Math.min(this.active, count - 1);
		if (MOVE_KEYS.has(event.key)) {
			event.preventDefault();
			// one sequence in time order: each bar its own column, so every arrow steps to the previous/next bar
			const to = move(this.bars().map((_, i) => ({ key: String(i), layer: i, y: 0 })), String(active), event.key);
			this.focusBar(to === undefined ? active : Number(to), false);
		} else if (event.key === "Enter" || event.key === " ") {
			event.preventDefault();
			this.focusBar(active, true);
		}
	}
}
