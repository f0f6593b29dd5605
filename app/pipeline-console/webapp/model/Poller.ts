import type JSONModel from "sap/ui/model/json/JSONModel";

/** Poll intervals (SPEC "Limits"): 30 s while no pipeline runs, 3 s while any runs. */
export const POLL_IDLE = 30000;
export const POLL_RUNNING = 3000;
/** The cheap check for changes made elsewhere (a run started by another client): status and last run of every pipeline. */
/** What the watch refreshes when pipelines changed: the list's rows, and the detail when its pipeline is among them. */
const ON_CHANGE = ["rows"];
const ON_SELECTED_CHANGE = ["detail", "rejects", "run"];
export const WATCH_INTERVAL = 5000;

type Refresh = () => unknown;

/**
 * One poll for every view: each registers what it refreshes; a poll runs them all, then schedules
 * the next (3 s while ui>/anyRunning, else 30 s). A watch (a small request every 5 s, registered by
 * the list) refreshes the list's rows (and the open pipeline) when it sees a change, so runs started
 * anywhere show within 5 s; the poll's rhythm (and the landscape) stay as they are.
 */
export default class Poller {
	private readonly refreshers = new Map<string, Refresh>();
	private timer?: ReturnType<typeof setTimeout>;
	private watchTimer?: ReturnType<typeof setTimeout>;
	private running?: Promise<void>;
	private watcher?: () => Promise<string[]>;
	private started = false;

	constructor(private readonly ui: JSONModel) {}

	/** A view's refresh, called on every poll (and once at once when the poll runs already). */
	register(key: string, refresh: Refresh): void {
		this.refreshers.set(key, refresh);
		if (this.started) void Promise.resolve().then(refresh).catch(() => undefined);
	}

	/** A refresh the watch calls (not the poll). */
	registerOnChange(key: string, refresh: Refresh): void {
		this.onChange.set(key, refresh);
	}

	private readonly onChange = new Map<string, Refresh>();

	/** Starts polling (once); `watch` answers which pipelines changed since it was last asked. */
	start(watch?: () => Promise<string[]>): Promise<void> {
		if (watch) this.watcher = watch;
		if (this.started) return this.poll();
		this.started = true;
		this.scheduleWatch();
		return this.poll();
	}

	poll(): Promise<void> {
		clearTimeout(this.timer);
		if (this.running) return this.running;
		this.running = (async () => {
			try {
				await Promise.all([...this.refreshers.values()].map(async refresh => {
					try {
						await refresh();
					} catch {
						/* each refresher shows its own errors */
					}
				}));
			} finally {
				this.running = undefined;
				const interval = this.ui.getProperty("/anyRunning") ? POLL_RUNNING : POLL_IDLE;
				this.ui.setProperty("/pollInterval", interval);
				this.ui.setProperty("/lastPoll", Date.now());
				this.timer = setTimeout(() => void this.poll(), interval);
			}
		})();
		return this.running;
	}

	private scheduleWatch(): void {
		this.watchTimer = setTimeout(() => void (async () => {
			try {
				const changed = this.watcher && !this.running ? await this.watcher() : [];
				if (changed.length) {
					const selected = this.ui.getProperty("/selected") as string | null;
					const keys = selected && changed.includes(selected) ? [...ON_CHANGE, ...ON_SELECTED_CHANGE] : ON_CHANGE;
					await Promise.all(keys.map(key => this.onChange.get(key) ?? this.refreshers.get(key)).map(async refresh => {
						try {
							await refresh?.();
						} catch {
							/* the next poll shows the error */
						}
					}));
				}
			} catch {
				/* the next poll shows the error */
			} finally {
				this.scheduleWatch();
			}
		})(), WATCH_INTERVAL);
	}

	stop(): void {
		clearTimeout(this.timer);
		clearTimeout(this.watchTimer);
	}
}
