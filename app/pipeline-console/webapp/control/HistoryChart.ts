import Control from "sap/ui/core/Control";
import type RenderManager from "sap/ui/core/RenderManager";
import type { MetadataOptions } from "sap/ui/core/Element";
import type { $ControlSettings } from "sap/ui/core/Control";
import type { PropertyBindingInfo } from "sap/ui/base/ManagedObject";
import { escape } from "./svg";

/** One run as the chart draws it (oldest first). */
export interface HistoryRun {
	id: string;
	status: string;
	start: string;
	/** Milliseconds from start to end (or to now while running). */
	durationMs: number;
	/** Records moved: created + updated + deleted. */
	rows: number;
	/** Accessible label and tooltip of the bar. */
	label: string;
}

export interface $HistoryChartSettings extends $ControlSettings {
	runs?: HistoryRun[] | PropertyBindingInfo | `{${string}}`;
	ariaLabel?: string | PropertyBindingInfo;
	emptyText?: string | PropertyBindingInfo;
}


const WIDTH = 640;
const HEIGHT = 180;
const LEFT = 48;
const RIGHT = 48;
const TOP = 12;
const BOTTOM = 24;

/** A short duration text: 850 ms, 12.3 s, 4 min 5 s. */
export function duration(ms: number): string {
	if (!Number.isFinite(ms) || ms < 0) return "";
	if (ms < 1000) return `${Math.round(ms)} ms`;
	if (ms < 60000) return `${(Math.round(ms / 100) / 10).toLocaleString("en-US")} s`;
	const seconds = Math.round(ms / 1000);
	const hours = Math.floor(seconds / 3600);
	const minutes = Math.floor((seconds % 3600) / 60);
	const rest = seconds % 60;
	if (hours) return minutes ? `${hours} h ${minutes} min` : `${hours} h`;
	return rest ? `${minutes} min ${rest} s` : `${minutes} min`;
}

/**
 * The last runs of a pipeline at a glance, drawn as SVG: one bar per run for its duration (failed
 * runs red), a line for the rows each run moved (right axis). Every bar is focusable with the
 * run's figures as its accessible name and tooltip.
 *
 * @namespace pipeline.console.control
 */
export default class HistoryChart extends Control {
	constructor(idOrSettings?: string | $HistoryChartSettings);
	constructor(id?: string, settings?: $HistoryChartSettings);
	constructor(id?: string, settings?: $HistoryChartSettings) {
		super(id, settings);
	}

	static readonly metadata: MetadataOptions = {
		properties: {
			runs: { type: "object", defaultValue: null },
			ariaLabel: { type: "string", defaultValue: "" },
			emptyText: { type: "string", defaultValue: "" }
		}
	};

	static renderer = {
		apiVersion: 2,
		render(rm: RenderManager, control: HistoryChart): void {
			const runs = (control.getProperty("runs") ?? []) as HistoryRun[];
			rm.openStart("div", control).class("pcChart");
			rm.attr("role", "group");
			const label = control.getProperty("ariaLabel") as string;
			if (label) rm.attr("aria-label", label);
			rm.openEnd();
			if (!runs.length) {
				rm.openStart("div").class("pcGraphEmpty").openEnd();
				rm.text(control.getProperty("emptyText") as string);
				rm.close("div");
			} else {
				rm.unsafeHtml(HistoryChart.svg(runs, label));
			}
			rm.close("div");
		}
	};

	static svg(runs: HistoryRun[], label: string): string {
		const plotW = WIDTH - LEFT - RIGHT;
		const plotH = HEIGHT - TOP - BOTTOM;
		const maxMs = Math.max(1, ...runs.map(r => r.durationMs || 0));
		const maxRows = Math.max(1, ...runs.map(r => r.rows || 0));
		const slot = plotW / Math.max(runs.length, 1);
		const barW = Math.max(4, Math.min(28, slot * 0.6));
		const parts: string[] = [];
		parts.push(`<svg xmlns="http://www.w3.org/2000/svg" class="pcChartSvg" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" style="max-width:${WIDTH}px;min-width:${WIDTH / 2}px" role="group" aria-label="${escape(label)}">`);
		const bottom = TOP + plotH;
		parts.push(`<line class="pcAxis" x1="${LEFT}" y1="${bottom}" x2="${LEFT + plotW}" y2="${bottom}"/>`);
		parts.push(`<line class="pcAxis" x1="${LEFT}" y1="${TOP}" x2="${LEFT}" y2="${bottom}"/>`);
		parts.push(`<line class="pcAxis" x1="${LEFT + plotW}" y1="${TOP}" x2="${LEFT + plotW}" y2="${bottom}"/>`);
		parts.push(`<text x="${LEFT - 4}" y="${TOP + 8}" text-anchor="end">${escape(duration(maxMs))}</text>`);
		parts.push(`<text x="${LEFT - 4}" y="${bottom}" text-anchor="end">0</text>`);
		parts.push(`<text x="${LEFT + plotW + 4}" y="${TOP + 8}">${escape(maxRows.toLocaleString("en-US"))}</text>`);
		parts.push(`<text x="${LEFT + plotW + 4}" y="${bottom}">0</text>`);
		parts.push(`<text x="${LEFT}" y="${HEIGHT - 6}">${escape("bars: duration")}</text>`);
		parts.push(`<text x="${LEFT + plotW}" y="${HEIGHT - 6}" text-anchor="end">${escape("line: rows moved")}</text>`);
		const points: string[] = [];
		runs.forEach((run, i) => {
			const cx = LEFT + slot * i + slot / 2;
			const h = Math.max(2, (run.durationMs / maxMs) * plotH);
			const cls = ["pcBar", run.status === "failed" ? "pcFailed" : "", run.status === "running" ? "pcRunningBar" : ""].join(" ").trim();
			const ry = bottom - (run.rows / maxRows) * plotH;
			points.push(`${cx.toFixed(1)},${ry.toFixed(1)}`);
			parts.push(`<g class="pcRun" data-run="${escape(run.id)}" data-status="${escape(run.status)}" tabindex="0" role="img" aria-label="${escape(run.label)}">`
				+ `<title>${escape(run.label)}</title>`
				+ `<rect class="${cls}" x="${(cx - barW / 2).toFixed(1)}" y="${(bottom - h).toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}"/>`
				+ `</g>`);
		});
		if (points.length > 1) parts.push(`<polyline class="pcRows" points="${points.join(" ")}"/>`);
		for (const point of points) {
			const [x, y] = point.split(",");
			parts.push(`<circle class="pcRowsDot" cx="${x}" cy="${y}" r="3"/>`);
		}
		parts.push("</svg>");
		return parts.join("");
	}
}
