import JSONModel from "sap/ui/model/json/JSONModel";
import type ODataModel from "sap/ui/model/odata/v4/ODataModel";
import type ResourceBundle from "sap/base/i18n/ResourceBundle";
import type { ApiError } from "./Api";

/**
 * What the signed-in user may do in the console, from the management service's `permissions()`.
 * The console only disables what the role does not allow (the service enforces the roles itself);
 * the "perm" model holds the flags and, per level, the tooltip naming the role a control needs.
 */

/** The three levels of the management service and the role each needs. */
export const ROLES = { view: "PipelineViewer", operate: "PipelineOperator", administer: "PipelineAdmin" } as const;
export type Level = keyof typeof ROLES;

/** The answer of `GET /pipeline/permissions()`. */
export interface Permissions {
	user: string | null;
	tenant: string | null;
	roles: string[];
	view: boolean;
	operate: boolean;
	administer: boolean;
}

/** The "perm" model: the permissions, whether they are known, and the texts the view binds to. */
export interface PermissionState extends Permissions {
	loaded: boolean;
	/** Why the user sees nothing (no role, not signed in, permissions not loadable); null when allowed to view. */
	denied: string | null;
	/** "Signed in as … (roles)". */
	summary: string;
	/** Tooltip of a control the user may not use: "Needs the <role> role". */
	needs: Record<Level, string>;
}

type Text = (key: string, args?: unknown[]) => string;

const NOTHING: Permissions = { user: null, tenant: null, roles: [], view: false, operate: false, administer: false };

/** The permission model before the answer is there: nothing is allowed (controls start disabled). */
export function createPermissionModel(): JSONModel {
	const model = new JSONModel({ ...NOTHING, loaded: false, denied: null, summary: "", needs: { view: "", operate: "", administer: "" } } satisfies PermissionState);
	model.setDefaultBindingMode("OneWay");
	return model;
}

/** Each level includes the ones below it (PipelineAdmin ⇒ PipelineOperator ⇒ PipelineViewer). */
function normalize(answer: Partial<Permissions>): Permissions {
	const administer = answer.administer === true;
	const operate = administer || answer.operate === true;
	return {
		user: answer.user ?? null,
		tenant: answer.tenant ?? null,
		roles: Array.isArray(answer.roles) ? answer.roles : [],
		view: operate || answer.view === true,
		operate,
		administer
	};
}

/**
 * A readable message for an answer 401 (not signed in) or 403; null for other errors. A 403 with a
 * message of its own (not only "Forbidden") keeps it: not every 403 is about the role.
 */
export function accessMessage(status: number | undefined, text: Text, serverMessage = ""): string | null {
	if (status === 401) return text("accessUnauthenticated");
	if (status !== 403) return null;
	return !serverMessage || /^forbidden\.?$/i.test(serverMessage.trim())
		? text("accessForbidden", [Object.values(ROLES).join(", ")])
		: text("accessForbiddenBecause", [serverMessage]);
}

/** An API error whose 401/403 message is one a user understands. */
export function readable(error: ApiError, text: Text): ApiError {
	const message = accessMessage(error.status, text, error.message);
	return message ? { ...error, message, code: error.code ?? String(error.status) } : error;
}

/**
 * Asks the service what the user may do (a plain GET: it does not need the service's metadata,
 * which a user without a role may not read) and fills the "perm" model.
 */
export async function loadPermissions(odata: ODataModel, model: JSONModel, bundle: ResourceBundle): Promise<PermissionState> {
	const text: Text = (key, args = []) => bundle.getText(key, args.map(String)) ?? key;
	const needs = { view: text("needsRole", [ROLES.view]), operate: text("needsRole", [ROLES.operate]), administer: text("needsRole", [ROLES.administer]) };
	let permissions = NOTHING;
	let denied: string | null = null;
	try {
		const response = await fetch(`${odata.getServiceUrl()}permissions()`, { headers: { Accept: "application/json" }, credentials: "same-origin" });
		if (response.ok) permissions = normalize(await response.json() as Partial<Permissions>);
		else denied = response.status === 403 ? text("accessNoRole", [Object.values(ROLES).join(", ")])
			: accessMessage(response.status, text) ?? text("permissionsError", [`HTTP ${response.status}`]);
	} catch (error) {
		denied = text("permissionsError", [(error as Error).message]);
	}
	if (!denied && !permissions.view) denied = text("accessNoRole", [Object.values(ROLES).join(", ")]);
	const roles = permissions.roles.filter(role => (Object.values(ROLES) as string[]).includes(role));
	const summary = permissions.user ? text("signedInAs", [permissions.user, roles.length ? roles.join(", ") : text("noRole")]) : "";
	const state: PermissionState = { ...permissions, loaded: true, denied, summary, needs };
	model.setData(state);
	return state;
}
