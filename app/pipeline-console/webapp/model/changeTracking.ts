import { setting } from "./effective";

// The tracker's lastKey of a pipeline that reads OData delta links (delta.mode 'odata-delta'): its
// delta link, stored relative to the service root (no host, no credentials), and whether change
// tracking is initialised (a tracked initial read stored a link). Other pipelines: their last key.

type Text = (key: string, args?: unknown[]) => string;

export function readsDeltaLinks(baseConfig: unknown, overrides: unknown): boolean {
	return setting(baseConfig, overrides, "delta.mode") === "odata-delta";
}

/** A stored delta link starts with "/" (the path below the service root). */
function deltaLink(lastKey: unknown): string | null {
	return typeof lastKey === "string" && lastKey.startsWith("/") ? lastKey : null;
}

/** The label of the tracker's lastKey: "Delta link" or "Last key". */
export function lastKeyLabel(text: Text, baseConfig: unknown, overrides: unknown): string {
	return text(readsDeltaLinks(baseConfig, overrides) ? "deltaLink" : "lastKey");
}

/** The tracker's lastKey as shown: an odata-delta pipeline's link, or a dash before its first tracked read. */
export function lastKeyValue(lastKey: unknown, baseConfig: unknown, overrides: unknown): string {
	if (readsDeltaLinks(baseConfig, overrides)) return deltaLink(lastKey) ?? "–";
	return typeof lastKey === "string" ? lastKey : "";
}

/** Whether change tracking is initialised, as text (empty for pipelines without delta links). */
export function changeTracking(text: Text, lastKey: unknown, baseConfig: unknown, overrides: unknown): string {
	if (!readsDeltaLinks(baseConfig, overrides)) return "";
	return text(deltaLink(lastKey) ? "changeTrackingOn" : "changeTrackingOff");
}

export function changeTrackingState(lastKey: unknown): string {
	return deltaLink(lastKey) ? "Success" : "Warning";
}
