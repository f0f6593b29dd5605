import Control from "sap/ui/core/Control";
import type { $ControlSettings } from "sap/ui/core/Control";
import type { MetadataOptions } from "sap/ui/core/Element";
import type RenderManager from "sap/ui/core/RenderManager";
import type Item from "sap/ui/core/Item";
import type { PropertyBindingInfo } from "sap/ui/base/ManagedObject";

export interface $GraphLegendSettings extends $ControlSettings {
	ariaLabel?: string | PropertyBindingInfo;
	items?: Item[] | Item;
}

/**
 * The legend of a Graph: one entry per node state, its swatch in the state's colour (the same
 * CSS as the nodes: `pcState-<key>`) and its text. Items: `core:Item` with the state as `key`
 * (failed, stale, customized, drift, running) and the explanation as `text`.
 *
 * @namespace pipeline.console.control
 */
export default class GraphLegend extends Control {
	constructor(idOrSettings?: string | $GraphLegendSettings);
	constructor(id?: string, settings?: $GraphLegendSettings);
	constructor(id?: string, settings?: $GraphLegendSettings) {
		super(id, settings);
	}

	static readonly metadata: MetadataOptions = {
		properties: {
			/** Accessible name of the legend (a list). */
			ariaLabel: { type: "string", defaultValue: "" }
		},
		defaultAggregation: "items",
		aggregations: {
			items: { type: "sap.ui.core.Item", multiple: true, singularName: "item" }
		}
	};

	static renderer = {
		apiVersion: 2,
		render(rm: RenderManager, control: GraphLegend): void {
			rm.openStart("ul", control).class("pcLegend");
			const label = control.getProperty("ariaLabel") as string;
			if (label) rm.attr("aria-label", label);
			rm.openEnd();
			for (const item of control.getAggregation("items") as Item[] ?? []) {
				rm.openStart("li", item).class("pcLegendItem").attr("data-state", item.getKey()).openEnd();
				rm.openStart("span").class("pcSwatch").class(`pcState-${item.getKey()}`).attr("aria-hidden", "true").openEnd().close("span");
				rm.openStart("span").class("pcLegendText").openEnd();
				rm.text(item.getText());
				rm.close("span");
				rm.close("li");
			}
			rm.close("ul");
		}
	};
}
