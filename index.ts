/**
 * The package entry (`require('cap-data-pipeline')`): the library's public API (lib/index.ts) and
 * the `data-pipeline` service class. It sits above both, so lib/ never imports srv/.
 */
export * from './lib/index.js'
export { default as DataPipelineService } from './srv/data-pipeline.js'
