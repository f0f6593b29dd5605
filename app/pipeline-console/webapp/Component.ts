import UIComponent from "sap/ui/core/UIComponent";
import JSONModel from "sap/ui/model/json/JSONModel";
import Device from "sap/ui/Device";
import type ODataModel from "sap/ui/model/odata/v4/ODataModel";
import type ResourceModel from "sap/ui/model/resource/ResourceModel";
import type ResourceBundle from "sap/base/i18n/ResourceBundle";
// the router class named in the manifest (imported so the self-contained bundle has it)
import "sap/m/routing/Router";
import { createPermissionModel, loadPermissions, type PermissionState } from "./model/permissions";
import Poller from "./model/Poller";

/**
 * The console: a FlexibleColumnLayout whose columns show one view each (list/runs/landscape,
 * pipeline detail/run, inspector), addressed by hash URLs (manifest routes). Shared state is in
 * the "ui" model; one Poller refreshes whatever the open views registered.
 *
 * @namespace pipeline.console
 */
export default class Component extends UIComponent {
	public static metadata = {
		manifest: "json",
		interfaces: ["sap.ui.core.IAsyncContentCreation"]
	};

	private permissions?: Promise<PermissionState>;
	private poller?: Poller;

	public init(): void {
		super.init();
		const device = new JSONModel(Device);
		device.setDefaultBindingMode("OneWay");
		this.setModel(device, "device");
		// view state shared by the columns (layout, selection, polling, inspector)
		this.setModel(new JSONModel({
			layout: "OneColumn",
			selected: null,
			tab: "overview",
			anyRunning: false,
			pollInterval: 30000,
			lastPoll: null,
			progress: null
		}), "ui");
		// what the signed-in user's role allows
		this.setModel(createPermissionModel(), "perm");
		this.poller = new Poller(this.getModel("ui") as JSONModel);
		// a user without a role sends no request the service would refuse: routes (and with them the
		// detail's requests) start once the role allows viewing
		void this.ready().then(permissions => {
			if (permissions.view) this.getRouter().initialize();
		});
	}

	/** The permissions, loaded once. */
	public ready(): Promise<PermissionState> {
		this.permissions ??= loadPermissions(this.getModel() as ODataModel, this.getModel("perm") as JSONModel,
			(this.getModel("i18n") as ResourceModel).getResourceBundle() as ResourceBundle);
		return this.permissions;
	}

	public getPoller(): Poller {
		return this.poller!;
	}

	public exit(): void {
		this.poller?.stop();
	}
}
