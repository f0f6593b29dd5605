import ComponentContainer from "sap/ui/core/ComponentContainer";

// Starts the console (the bootstrap's on-init module): one component filling the page.
new ComponentContainer({
	id: "container",
	name: "pipeline.console",
	manifest: true,
	async: true,
	height: "100%",
	settings: { id: "console" }
}).placeAt("content");
