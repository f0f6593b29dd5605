/**
 * A small layered ("Sugiyama-style") layout for the console graphs: layers by longest path
 * from the roots, nodes ordered by group and by the mean position of their predecessors,
 * groups framed per layer, lines as horizontal cubic curves. Pure and DOM-free.
 */
export type GraphStatus = "None" | "Success" | "Warning" | "Error";

export interface GraphNode {
	key: string;
	title: string;
	kind: string;
	group?: string;
	/** A GraphStatus; anything else renders as None. */
	status?: string;
	description?: string;
	running?: boolean;
	/** Landscape pipelines: 'fresh' | 'stale' | 'unknown' (maxStaleness). */
	freshness?: string;
	/** 'failed' | 'stale' | 'customized' | 'drift': the node's own colour and word (GraphLegend). */
	state?: string;
}

export interface GraphLine {
	from: string;
	to: string;
	/** A GraphStatus; anything else renders as None. */
	status?: string;
}

export interface GraphData {
	nodes: GraphNode[];
	lines: GraphLine[];
	groups?: Array<{ key: string; title: string }>;
}

export interface Box extends GraphNode {
	x: number;
	y: number;
	width: number;
	height: number;
	layer: number;
	status: string;
}

export interface Edge {
	from: string;
	to: string;
	status: string;
	path: string;
}

export interface Frame {
	title: string;
	x: number;
	y: number;
	width: number;
	height: number;
}

export interface Layout {
	width: number;
	height: number;
	boxes: Box[];
	edges: Edge[];
	frames: Frame[];
}

export const NODE_WIDTH = 190;
/** Three lines: title, description, state word. */
export const NODE_HEIGHT = 60;
const GAP_X = 70;
const GAP_Y = 16;
const GROUP_GAP = 30;
const PAD = 12;
const FRAME_PAD = 8;
const FRAME_HEAD = 18;

/** Layer of every node: the longest path from a node without predecessors (cycles are cut). */
export function layers(data: GraphData): Map<string, number> {
	const keys = new Set(data.nodes.map(n => n.key));
	const preds = new Map<string, string[]>();
	for (const node of data.nodes) preds.set(node.key, []);
	for (const line of data.lines) if (keys.has(line.from) && keys.has(line.to) && line.from !== line.to) preds.get(line.to)!.push(line.from);
	const result = new Map<string, number>();
	const visiting = new Set<string>();
	const visit = (key: string): number => {
		const known = result.get(key);
		if (known !== undefined) return known;
		if (visiting.has(key)) return 0; // a cycle: cut here
		visiting.add(key);
		let layer = 0;
		for (const pred of preds.get(key) ?? []) layer = Math.max(layer, visit(pred) + 1);
		visiting.delete(key);
		result.set(key, layer);
		return layer;
	};
	for (const node of data.nodes) visit(node.key);
	return result;
}

export function layout(data: GraphData): Layout {
	const layerOf = layers(data);
	const groupTitle = new Map((data.groups ?? []).map(g => [g.key, g.title]));
	const byLayer: GraphNode[][] = [];
	for (const node of data.nodes) (byLayer[layerOf.get(node.key)!] ??= []).push(node);
	const position = new Map<string, number>();
	const boxes: Box[] = [];
	const frames: Frame[] = [];
	let height = 0;
	byLayer.forEach((nodes, layer) => {
		const mean = (node: GraphNode): number => {
			const ys = data.lines.filter(l => l.to === node.key && position.has(l.from)).map(l => position.get(l.from)!);
			return ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : Number.MAX_SAFE_INTEGER;
		};
		// groups keep together, ordered by where their members' predecessors are
		const groups = new Map<string, GraphNode[]>();
		for (const node of nodes) {
			const list = groups.get(node.group ?? "");
			if (list) list.push(node); else groups.set(node.group ?? "", [node]);
		}
		const groupMean = (list: GraphNode[]) => Math.min(...list.map(mean));
		const ordered = [...groups.entries()].sort((a, b) => groupMean(a[1]) - groupMean(b[1]) || a[0].localeCompare(b[0]));
		const x = PAD + layer * (NODE_WIDTH + GAP_X);
		let y = PAD;
		const framed = ordered.length > 1 || (data.groups?.length ?? 0) > 0;
		for (const [group, members] of ordered) {
			members.sort((a, b) => mean(a) - mean(b) || a.title.localeCompare(b.title));
			const top = y;
			if (framed && group) y += FRAME_HEAD;
			for (const node of members) {
				boxes.push({ ...node, status: String(node.status ?? "None"), x, y, width: NODE_WIDTH, height: NODE_HEIGHT, layer });
				position.set(node.key, y);
				y += NODE_HEIGHT + GAP_Y;
			}
			if (framed && group) {
				frames.push({ title: groupTitle.get(group) ?? group, x: x - FRAME_PAD, y: top - FRAME_PAD / 2, width: NODE_WIDTH + 2 * FRAME_PAD, height: y - top - GAP_Y + FRAME_PAD });
				y += GROUP_GAP - GAP_Y;
			}
		}
		height = Math.max(height, y);
	});
	const boxOf = new Map(boxes.map(b => [b.key, b]));
	const edges: Edge[] = [];
	for (const line of data.lines) {
		const from = boxOf.get(line.from);
		const to = boxOf.get(line.to);
		if (!from || !to) continue;
		const x1 = from.x + from.width;
		const y1 = from.y + from.height / 2;
		let path: string;
		if (to.layer > from.layer) {
			const x2 = to.x;
			const y2 = to.y + to.height / 2;
			const bend = (x2 - x1) / 2;
			path = `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
		} else {
			// same or earlier layer (cycle or sibling): loop around the right side
			const x2 = to.x + to.width;
			const y2 = to.y + to.height / 2;
			const out = Math.max(x1, x2) + GAP_X / 2;
			path = `M${x1},${y1} C${out},${y1} ${out},${y2} ${x2},${y2}`;
		}
		edges.push({ from: line.from, to: line.to, status: String(line.status ?? "None"), path });
	}
	const width = PAD * 2 + byLayer.length * NODE_WIDTH + Math.max(0, byLayer.length - 1) * GAP_X + GAP_X / 2;
	return { width, height: Math.max(height, NODE_HEIGHT + 2 * PAD) + PAD, boxes, edges, frames };
}
