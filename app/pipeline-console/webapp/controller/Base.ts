import Controller from "sap/ui/core/mvc/Controller";
import type View from "sap/ui/core/mvc/View";
import type JSONModel from "sap/ui/model/json/JSONModel";
import type ODataModel from "sap/ui/model/odata/v4/ODataModel";
import type ResourceModel from "sap/ui/model/resource/ResourceModel";
import type ResourceBundle from "sap/base/i18n/ResourceBundle";
import type Router from "sap/ui/core/routing/Router";
import type Control from "sap/ui/core/Control";
import MessageBox from "sap/m/MessageBox";
import formatMessage from "sap/base/strings/formatMessage";
import { duration } from "../control/HistoryChart";
import type Component from "../Component";
import type Poller from "../model/Poller";
import { apiError } from "../model/Api";
import { readable } from "../model/permissions";
import { display } from "../model/types";
import * as format from "../model/format";
import * as pipelineFormat from "../model/formatPipeline";

/**
 * What every view's controller shares: the models, texts, router, poller, error display and the
 * formatters of the list's and the runs' cells.
 *
 * @namespace pipeline.console.controller
 */
export default class Base extends Controller {
	protected component(): Component {
		return this.getOwnerComponent() as Component;
	}

	protected odata(): ODataModel {
		return this.component().getModel() as ODataModel;
	}

	protected ui(): JSONModel {
		return this.component().getModel("ui") as JSONModel;
	}

	protected perm(): JSONModel {
		return this.component().getModel("perm") as JSONModel;
	}

	protected router(): Router {
		return this.component().getRouter();
	}

	protected poller(): Poller {
		return this.component().getPoller();
	}

	protected bundle(): ResourceBundle {
		return (this.component().getModel("i18n") as ResourceModel).getResourceBundle() as ResourceBundle;
	}

	protected text(key: string, args: unknown[] = []): string {
		return this.bundle().getText(key, args.map(display)) ?? key;
	}

	/** The text function the format modules take. */
	protected readonly t = (key: string, args?: unknown[]): string => this.text(key, args);

	protected control<T extends Control>(id: string): T {
		return (this.getView() as View).byId(id) as T;
	}

	protected selected(): string | null {
		return this.ui().getProperty("/selected") as string | null;
	}

	/** Shows an API error as a readable message (MessageBox with code, status and target). */
	protected showError(error: unknown): void {
		const e = readable(apiError(error), this.t);
		const details = [e.code, e.status ? `HTTP ${e.status}` : "", e.target ? `target: ${e.target}` : ""].filter(Boolean).join(" · ");
		MessageBox.error(e.message, { title: this.text("errorTitle"), details: details || undefined });
	}

	// ---------------------------------------------------------------- shared formatters

	public formatMessage(pattern: string, ...args: unknown[]): string {
		return format.message(pattern, args);
	}

	public formatDateTime(value: string | null): string {
		return format.dateTime(value);
	}

	/** "3 minutes ago"; the second part (ui>/lastPoll) only makes the text follow the clock on every poll. */
	public formatRelative(value: string | null, _tick?: unknown): string {
		return format.relative(value);
	}

	/** The absolute time and its time zone: the tooltip of a relative time. */
	public formatAbsolute(value: string | null): string {
		return format.absolute(value);
	}

	/** `#/pipelines/<name>/runs/<ID>`: a run's page. */
	public formatRunHref(name: string | null, runId: string | null): string {
		return name && runId ? `#/pipelines/${encodeURIComponent(name)}/runs/${encodeURIComponent(runId)}` : "";
	}

	public formatLastSync(value: string | null): string {
		return value ? format.dateTime(value) : this.text("neverRun");
	}

	public formatJson(value: unknown): string {
		return format.json(value);
	}

	public formatDuration(start: string | null, end: string | null): string {
		return format.runDuration(start, end);
	}

	public formatRate(start: string | null, end: string | null, created: unknown, updated: unknown, deleted: unknown, unchanged?: unknown): string {
		return format.runRate(start, end, created, updated, deleted, unchanged);
	}

	public formatRunDrift(drift: unknown): string {
		return pipelineFormat.runDrift(this.t, drift);
	}

	public runDriftState(drift: unknown): string {
		return pipelineFormat.runDriftState(drift);
	}

	public formatDriftMessages(drift: unknown): string {
		return pipelineFormat.driftMessages(drift);
	}

	public formatStaleTooltip(pattern: string, maxStaleness: number | string | null): string {
		return pattern ? formatMessage(pattern, [maxStaleness !== null && maxStaleness !== undefined ? duration(Number(maxStaleness)) : ""]) : "";
	}

	/** A run's error in a message box (the JSON as details). */
	public onShowRunError(event: { getSource(): unknown }): void {
		const raw = (event.getSource() as Control).getBindingContext()?.getProperty("error") as string | null;
		let text = raw ?? "";
		let details: string | undefined;
		try {
			const parsed = JSON.parse(text) as { message?: string; code?: string };
			details = JSON.stringify(parsed, null, 2);
			text = parsed.message ?? text;
		} catch {
			/* plain text */
		}
		MessageBox.error(text, { title: this.text("runErrorTitle"), details });
	}
}
