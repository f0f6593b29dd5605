/**
 * Keyboard moves inside a laid-out graph (one tab stop, arrow keys inside: "roving tabindex").
 * Up/Down go to the previous/next node in reading order (column by column, top to bottom),
 * Left/Right to the nearest node in the previous/next column, Home/End to the first/last node.
 * Laid out in rows instead (`layout: "rows"`, a timeline's lanes: `layer` is the lane, `y` the
 * position along it), the arrows turn with the layout: Left/Right follow the reading order (lane by
 * lane, left to right), Up/Down go to the nearest node in the lane above/below.
 * Pure and DOM-free.
 */
export interface Spot {
	key: string;
	layer: number;
	y: number;
}

/** The nodes in reading order: by column (layer), then top to bottom. */
export function readingOrder<T extends Spot>(spots: T[]): T[] {
	return [...spots].sort((a, b) => a.layer - b.layer || a.y - b.y);
}

/** The keys that move the focus (arrow keys, Home, End). */
export const MOVE_KEYS = new Set(["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End"]);

/** Arrow keys of a layout in rows as the same moves in columns. */
const TURNED: Record<string, string> = { ArrowRight: "ArrowDown", ArrowLeft: "ArrowUp", ArrowDown: "ArrowRight", ArrowUp: "ArrowLeft" };

/** The key focus moves to for `pressed` on node `from`; undefined: not a move (or nowhere to go). */
export function move(spots: Spot[], from: string, pressed: string, layout: "columns" | "rows" = "columns"): string | undefined {
	const key = layout === "rows" ? TURNED[pressed] ?? pressed : pressed;
	const order = readingOrder(spots);
	if (!order.length) return undefined;
	const index = order.findIndex(s => s.key === from);
	if (index < 0) return order[0].key;
	const current = order[index];
	switch (key) {
		case "ArrowDown": return order[index + 1]?.key;
		case "ArrowUp": return index > 0 ? order[index - 1].key : undefined;
		case "Home": return order[0].key;
		case "End": return order[order.length - 1].key;
		case "ArrowRight":
		case "ArrowLeft": {
			const layers = [...new Set(order.map(s => s.layer))];
			const at = layers.indexOf(current.layer);
			const layer = layers[key === "ArrowRight" ? at + 1 : at - 1];
			if (layer === undefined) return undefined;
			const column = order.filter(s => s.layer === layer);
			return column.reduce((best, s) => Math.abs(s.y - current.y) < Math.abs(best.y - current.y) ? s : best).key;
		}
		default: return undefined;
	}
}
