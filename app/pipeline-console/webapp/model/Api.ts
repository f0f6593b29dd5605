import type ODataModel from "sap/ui/model/odata/v4/ODataModel";
import type ODataContextBinding from "sap/ui/model/odata/v4/ODataContextBinding";

/** The service's namespace: bound operations are addressed as `<entity>/<namespace>.<operation>`. */
const NAMESPACE = "DataPipelineManagementService";

export type Parameters = Record<string, string | number | boolean | null | undefined>;

/** The parts of a failed request the console shows (the V4 model's error, CAP's OData error JSON). */
export interface ApiError {
	message: string;
	code?: string;
	target?: string;
	status?: number;
}

/** Turns whatever a rejected V4 request gave into a readable message with code and status. */
export function apiError(error: unknown): ApiError {
	const e = (error ?? {}) as { message?: string; status?: number; error?: { code?: string; message?: string; target?: string } };
	return {
		message: e.error?.message || e.message || String(error),
		code: e.error?.code,
		target: e.error?.target,
		status: e.status
	};
}

/**
 * Operations of DataPipelineManagementService through the default OData V4 model (so CSRF
 * handling and error parsing are the model's): functions and actions, bound and unbound.
 */
export default class Api {
	constructor(private readonly model: ODataModel) {}

	/** `/Pipelines('<name>')` with the key quoted and encoded as the V4 model expects. */
	static pipelinePath(name: string): string {
		return `/Pipelines('${encodeURIComponent(name.replace(/'/g, "''"))}')`;
	}

	/** Invokes an operation (`path` without `(...)`) and returns the bound result object. */
	async invoke(path: string, parameters: Parameters = {}): Promise<Record<string, unknown>> {
		const binding = this.model.bindContext(`${path}(...)`) as ODataContextBinding;
		try {
			for (const [name, value] of Object.entries(parameters)) if (value !== undefined) binding.setParameter(name, value);
			await binding.invoke();
			return (binding.getBoundContext()?.getObject() ?? {}) as Record<string, unknown>;
		} finally {
			binding.destroy();
		}
	}

	bound(name: string, operation: string, parameters?: Parameters): Promise<Record<string, unknown>> {
		return this.invoke(`${Api.pipelinePath(name)}/${NAMESPACE}.${operation}`, parameters);
	}

	unbound(operation: string, parameters?: Parameters): Promise<Record<string, unknown>> {
		return this.invoke(`/${operation}`, parameters);
	}

	/** A function returning a JSON text (LargeString), parsed. */
	async json<T>(result: Promise<Record<string, unknown>>): Promise<T> {
		const value = (await result).value;
		return (typeof value === "string" ? JSON.parse(value) : value) as T;
	}

	landscape<T>(): Promise<T> {
		return this.json<T>(this.unbound("landscapeMetadata"));
	}

	flow<T>(name: string): Promise<T> {
		return this.json<T>(this.bound(name, "flowMetadata"));
	}

	configView<T>(name: string): Promise<T> {
		return this.json<T>(this.bound(name, "configView"));
	}

	capabilities<T>(name: string): Promise<T> {
		return this.json<T>(this.bound(name, "inspectCapabilities"));
	}

	inspect<T>(name: string, parameters: Parameters): Promise<T> {
		return this.json<T>(this.bound(name, "inspectData", parameters));
	}
}
