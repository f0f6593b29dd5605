import Control from "sap/ui/core/Control";
import type RenderManager from "sap/ui/core/RenderManager";
import type { MetadataOptions } from "sap/ui/core/Element";
import type { $ControlSettings } from "sap/ui/core/Control";
import type { PropertyBindingInfo } from "sap/ui/base/ManagedObject";
import { MOVE_KEYS, move, type Spot } from "./roving";
import { escape } from "./svg";

/** One run as the timeline draws it. */
export interface TimelineRun {
	id: string;
	pipeline: string;
	status: string;
	/** ISO start; end null while the run runs (the bar reaches `to`). */
	start: string;
	end: string | null;
	/** Accessible name and tooltip of the bar (starts with the lane's visible name). */
	label: string;
}

/** The drawn range, the runs, and the texts of the legend and axis. */
export interface TimelineData {
	from: string;
	to: string;
	runs: TimelineRun[];
	/** status → legend text (order = legend order). */
	legend: Record<string, string>;
	/** Axis texts at the start, middle and end of the range. */
	ticks: [string, string, string];
}

export interface $RunsTimelineSettings extends $ControlSettings {
	data?: TimelineData | PropertyBindingInfo | `{${string}}`;
	ariaLabel?: string | PropertyBindingInfo;
	emptyText?: string | PropertyBindingInfo;
	runPress?: (event: unknown) => void;
}

interface DomEvent {
	target: EventTarget | null;
	key?: string;
	preventDefault(): void;
}

const WIDTH = 960;
const LABEL = 180;
const RIGHT = 12;
const LANE = 22;
const TOP = 20;

/**
 * A Gantt of runs: one lane per pipeline (by name), a bar per run from start to end (running runs to
 * the range's end), coloured by status (class `pcStatus-<status>`) with a text legend. One tab stop:
 * the bars are a roving group (arrow keys move between them, Home/End), Enter, Space or a click fires
 * `runPress` with pipeline and run.
 *
 * @namespace pipeline.console.control
 */
export default class RunsTimeline extends Control {
	/** The run that holds the group's tab stop (kept across re-renders by the poll). */
	private active?: string;

	constructor(idOrSettings?: string | $RunsTimelineSettings);
	constructor(id?: string, settings?: $RunsTimelineSettings);
	constructor(id?: string, settings?: $RunsTimelineSettings) {
		super(id, settings);
	}

	static readonly metadata: MetadataOptions = {
		properties: {
			data: { type: "object", defaultValue: null },
			ariaLabel: { type: "string", defaultValue: "" },
			emptyText: { type: "string", defaultValue: "" }
		},
		events: {
			runPress: { parameters: { pipeline: { type: "string" }, runId: { type: "string" } } }
		}
	};

	static renderer = {
		apiVersion: 2,
		render(rm: RenderManager, control: RunsTimeline): void {
			const data = control.getProperty("data") as TimelineData | null;
			const label = control.getProperty("ariaLabel") as string;
			rm.openStart("div", control).class("pcRunsTimeline").openEnd();
			if (!data?.runs.length) {
				rm.openStart("div").class("pcGraphEmpty").openEnd();
				rm.text(control.getProperty("emptyText") as string);
				rm.close("div");
			} else {
				const ids = data.runs.map(run => run.id);
				const active = control.active && ids.includes(control.active) ? control.active : RunsTimeline.order(data.runs)[0].id;
				rm.unsafeHtml(RunsTimeline.svg(data, label, active));
				// the legend is text: the status is never told by colour alone
				rm.openStart("ul").class("pcTimelineLegend").openEnd();
				for (const [status, text] of Object.entries(data.legend)) {
					rm.openStart("li").class("pcLegendItem").openEnd();
					rm.openStart("span").class("pcSwatch").class(`pcStatus-${status}`).attr("aria-hidden", "true").openEnd().close("span");
					rm.text(text);
					rm.close("li");
				}
				rm.close("ul");
			}
			rm.close("div");
		}
	};

	/** Lanes by pipeline name, runs in a lane by start: the order the arrow keys follow. */
	static order(runs: TimelineRun[]): TimelineRun[] {
		return [...runs].sort((a, b) => a.pipeline.localeCompare(b.pipeline) || a.start.localeCompare(b.start));
	}

	static svg(data: TimelineData, label: string, active: string): string {
		const from = new Date(data.from).getTime();
		const to = Math.max(new Date(data.to).getTime(), from + 1);
		const lanes = [...new Set(RunsTimeline.order(data.runs).map(run => run.pipeline))];
		const plotW = WIDTH - LABEL - RIGHT;
		const height = TOP + lanes.length * LANE + 4;
		const x = (ms: number) => LABEL + Math.min(Math.max((ms - from) / (to - from), 0), 1) * plotW;
		const parts: string[] = [];
		parts.push(`<svg xmlns="http://www.w3.org/2000/svg" class="pcTimelineSvg" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" style="max-width:${WIDTH}px;min-width:${WIDTH / 2}px" role="group" aria-label="${escape(label)}">`);
		parts.push(`<text class="pcTick" x="${LABEL}" y="12">${escape(data.ticks[0])}</text>`);
		parts.push(`<text class="pcTick" x="${LABEL + plotW / 2}" y="12" text-anchor="middle">${escape(data.ticks[1])}</text>`);
		parts.push(`<text class="pcTick" x="${LABEL + plotW}" y="12" text-anchor="end">${escape(data.ticks[2])}</text>`);
		lanes.forEach((lane, i) => {
			const y = TOP + i * LANE;
			parts.push(`<g class="pcLane" data-pipeline="${escape(lane)}"><line class="pcAxis" x1="${LABEL}" y1="${y + LANE}" x2="${LABEL + plotW}" y2="${y + LANE}"/>`
				+ `<text class="pcLaneName" x="${LABEL - 6}" y="${y + 15}" text-anchor="end">${escape(lane.length > 26 ? `${lane.slice(0, 25)}…` : lane)}</text></g>`);
		});
		for (const run of RunsTimeline.order(data.runs)) {
			const y = TOP + lanes.indexOf(run.pipeline) * LANE + 4;
			const x1 = x(new Date(run.start).getTime());
			const x2 = Math.max(x(run.end ? new Date(run.end).getTime() : to), x1 + 4);
			parts.push(`<g class="pcGanttRun pcStatus-${escape(run.status)}" data-run="${escape(run.id)}" data-pipeline="${escape(run.pipeline)}" data-status="${escape(run.status)}"`
				+ ` tabindex="${run.id === active ? 0 : -1}" role="link" aria-label="${escape(run.label)}">`
				+ `<title>${escape(run.label)}</title>`
				+ `<rect x="${x1.toFixed(1)}" y="${y}" width="${(x2 - x1).toFixed(1)}" height="${LANE - 8}" rx="2"/></g>`);
		}
		parts.push("</svg>");
		return parts.join("");
	}

	/** Whether a bar had the focus before a re-render (the poll's new data): it gets it back after. */
	private hadFocus = false;

	onBeforeRendering(): void {
		const active = document.activeElement;
		this.hadFocus = Boolean(active && this.getDomRef()?.contains(active));
	}

	onAfterRendering(): void {
		if (!this.hadFocus) return;
		this.hadFocus = false;
		this.getDomRef()?.querySelector<HTMLElement>('g.pcGanttRun[tabindex="0"]')?.focus();
	}

	private bars(): HTMLElement[] {
		return [...(this.getDomRef()?.querySelectorAll<HTMLElement>("g.pcGanttRun") ?? [])];
	}

	private moveTo(bar: HTMLElement | undefined): void {
		if (!bar) return;
		for (const other of this.bars()) other.setAttribute("tabindex", other === bar ? "0" : "-1");
		this.active = bar.getAttribute("data-run") ?? undefined;
		bar.focus();
	}

	/** The bars as a layout in rows for ./roving: a lane per pipeline, a bar's place along it its left edge. */
	private spots(bars: HTMLElement[]): Spot[] {
		const lanes = [...new Set(bars.map(b => b.getAttribute("data-pipeline")))];
		return bars.map(b => ({
			key: b.getAttribute("data-run") ?? "",
			layer: lanes.indexOf(b.getAttribute("data-pipeline")),
			y: Number(b.querySelector("rect")?.getAttribute("x") ?? 0)
		}));
	}

	onclick(event: DomEvent): void {
		const bar = event.target instanceof Element ? event.target.closest<HTMLElement>("g.pcGanttRun") : null;
		if (!bar) return;
		this.moveTo(bar);
		this.press(bar);
	}

	onkeydown(event: DomEvent): void {
		const bar = event.target instanceof Element ? event.target.closest<HTMLElement>("g.pcGanttRun") : null;
		if (!bar) return;
		if (event.key && MOVE_KEYS.has(event.key)) {
			event.preventDefault();
			// Left/Right: the previous/next run (lane by lane, by start), Up/Down: the nearest run in the lane above/below
			const bars = this.bars();
			const to = move(this.spots(bars), bar.getAttribute("data-run") ?? "", event.key, "rows");
			this.moveTo(bars.find(b => b.getAttribute("data-run") === to) ?? bar);
		} else if (event.key === "Enter" || event.key === " ") {
			event.preventDefault();
			this.press(bar);
		}
	}

	private press(bar: Element): void {
		this.fireEvent("runPress", { pipeline: bar.getAttribute("data-pipeline"), runId: bar.getAttribute("data-run") });
	}
}
