/**
 * Keyboard moves inside a laid-out graph (one tab stop, arrow keys inside: "roving tabindex").
 * Up/Down go to the previous/next node in reading order (column by column, top to bottom),
 * Left/Right to the nearest node in the previous/next column, Home/End to the first/last node.
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

/** The key focus moves to for `key` pressed on node `from`; undefined: not a move (or nowhere to go). */
export function move(spots: Spot[], from: string, key: string): string | undefined {
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
