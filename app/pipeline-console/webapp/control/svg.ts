/** Text for SVG markup written by the console's own controls (graph, history chart). */
export const escape = (text: unknown): string => String(text ?? "")
	.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
