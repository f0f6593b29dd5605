import UIComponent from "sap/ui/core/UIComponent";
import JSONModel from "sap/ui/model/json/JSONModel";
import Device from "sap/ui/Device";
import { createPermissionModel } from "./model/permissions";

/**
 * @namespace pipeline.console
 */
export default class Component extends UIComponent {
	public static metadata = {
		manifest: "json",
		interfaces: ["sap.ui.core.IAsyncContentCreation"]
	};

	public init(): void {
		super.init();
		const device = new JSONModel(Device);
		device.setDefaultBindingMode("OneWay");
		this.setModel(device, "device");
		// view state shared by the three columns (layout, selection, polling, inspector)
		this.setModel(new JSONModel({
			layout: "OneColumn",
			selected: null,
			anyRunning: false,
			pollInterval: 30000,
			lastPoll: null,
			progress: null
		}), "ui");
		// what the signed-in user's role allows (filled by the controller from permissions())
		this.setModel(createPermissionModel(), "perm");
	}
}
