import { parseJson } from "./types";

// A pipeline's effective settings as the console reads them from its row (baseConfig and overrides, JSON).

/** The effective value of a setting: an override (dotted or nested) over the coded baseConfig. */
export function setting(baseConfig: unknown, overrides: unknown, path: string): unknown {
	const lookup = (object: Record<string, unknown> | null): unknown => {
		if (!object) return undefined;
		if (path in object) return object[path];
		return path.split(".").reduce<unknown>((at, key) => at && typeof at === "object" ? (at as Record<string, unknown>)[key] : undefined, object);
	};
	const override = lookup(parseJson<Record<string, unknown>>(overrides));
	return override !== undefined ? override : lookup(parseJson<Record<string, unknown>>(baseConfig));
}
