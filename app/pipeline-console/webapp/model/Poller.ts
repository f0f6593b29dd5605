import type JSONModel from "sap/ui/model/json/JSONModel";

/** Poll intervals (SPEC "Limits"): 30 s while no pipeline runs, 3 s while any runs. */
export const POLL_IDLE = 30000;
export const POLL_RUNNING = 3000;
/** The cheap check for changes made elsewhere (a run started by another client): status and last run of every pipeline. */
export const WATCH_INTERVAL = 5000;

type Refresh = () => unknown;

/**
 * One poll for every view: each registers what it refreshes; a poll runs them all, then schedules
 * the next (3 s while ui>/anyRunning, else 30 s). A watch (a small request every 5 s, registered by
 * the list) starts a poll at once when it sees a change, so runs started anywhere show within 5 s.
 */
export default class Poller {
	private readonly refreshers = new Map<string, Refresh>();
	private timer?: ReturnType<typeof setTimeout>;
	private watchTimer?: ReturnType<typeof setTimeout>;
	private running?: Promise<void>;
	private watcher?: () => Promise<boolean>;
	private started = false;

	constructor(private readonly ui: JSONModel) {}

	/** A view's refresh, called on every poll (and once at once when the poll runs already). */
	register(key: string, refresh: Refresh): void {
		this.refreshers.set(key, refresh);
		if (this.started) void Promise.resolve().then(refresh).catch(() => undefined);
	}

	/** Starts polling (once); `watch` answers whether anything changed since it was last asked. */
	start(watch?: () => Promise<boolean>): Promise<void> {
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
				if (this.watcher && !this.running && await this.watcher()) await this.poll();
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
