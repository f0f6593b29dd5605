import { readFileSync } from 'node:fs'
import { defineConfig } from 'vitepress'

/** CDS has no grammar in Shiki: a small one of our own, for the keywords, annotations, strings and comments. */
const cds = JSON.parse(readFileSync(new URL('./cds.tmLanguage.json', import.meta.url), 'utf8'))

/**
 * The docs site (`npm run docs`, `npm run docs:build`). Built offline: the default theme's fonts are
 * bundled, search is the local index, and nothing is loaded from another origin
 * (scripts/docs-check.mjs checks the output, and every internal link and anchor).
 */
export default defineConfig({
  title: 'cap-data-pipeline',
  description: 'Data pipelines and federation for SAP CAP',
  // VitePress fails the build on a dead link to a page; scripts/docs-check.mjs adds the anchors
  ignoreDeadLinks: false,
  cleanUrls: false,
  lastUpdated: false,
  srcExclude: ['**/README.md'],
  markdown: { languages: [cds] },
  themeConfig: {
    search: { provider: 'local' },
    outline: { level: [2, 3] },
    nav: [
      { text: 'Getting started', link: '/getting-started' },
      { text: 'Guides', link: '/guide/replicate' },
      { text: 'Concepts', link: '/concepts/' },
      { text: 'Reference', link: '/reference/settings' },
      { text: 'Decisions', link: '/decisions/' },
    ],
    sidebar: [
      { text: 'Introduction', items: [
        { text: 'What it is', link: '/' },
        { text: 'Getting started', link: '/getting-started' },
      ] },
      { text: 'Guides', items: [
        { text: 'Replicate a remote entity', link: '/guide/replicate' },
        { text: "CAP's @federated", link: '/guide/federated' },
        { text: 'Delegate, with caches', link: '/guide/delegate' },
        { text: 'Pipelines in code', link: '/guide/pipelines-in-code' },
        { text: 'Event-driven replication', link: '/guide/event-driven' },
        { text: 'Partitioned reads over a WAN', link: '/guide/partitioned-reads' },
        { text: 'SAP extractors (ODP) and delta links', link: '/guide/odata-delta-links' },
        { text: 'The console', link: '/guide/console' },
        { text: 'Multitenancy', link: '/guide/multitenancy' },
        { text: 'Production on Cloud Foundry and Kyma', link: '/guide/production' },
        { text: 'Monitoring with OpenTelemetry', link: '/guide/monitoring' },
        { text: 'Security and roles', link: '/guide/security' },
      ] },
      { text: 'Concepts', items: [
        { text: 'What a run guarantees', link: '/concepts/' },
        { text: 'Guard and lease', link: '/concepts/guard-and-lease' },
        { text: 'Delta and ties', link: '/concepts/delta' },
        { text: 'Deletes', link: '/concepts/deletes' },
        { text: 'Rejected records', link: '/concepts/rejects' },
        { text: 'Schema drift', link: '/concepts/drift' },
        { text: 'Counts, progress and freshness', link: '/concepts/counts' },
      ] },
      { text: 'Reference', items: [
        { text: 'Settings', link: '/reference/settings' },
        { text: 'Pipeline settings (generated)', link: '/reference/settings-generated' },
        { text: 'Management API', link: '/reference/management-api' },
        { text: 'Management API model (generated)', link: '/reference/management-api-generated' },
        { text: 'Adapters', link: '/reference/adapters' },
        { text: 'Events and hooks', link: '/reference/events' },
        { text: 'Error codes and troubleshooting', link: '/reference/errors' },
        { text: 'Changelog', link: '/reference/changelog' },
      ] },
      { text: 'More', items: [
        { text: 'Benchmarks', link: '/benchmarks' },
        { text: 'Developing the plugin', link: '/development' },
        { text: 'Architecture', link: '/architecture' },
        { text: 'Decision records', link: '/decisions/' },
      ] },
      { text: 'Decision records', collapsed: true, items: [
        { text: '1. Fast write path', link: '/decisions/0001-fast-write-path' },
        { text: '2. Roles checked in code', link: '/decisions/0002-roles-checked-in-code' },
        { text: '3. Caches per caller', link: '/decisions/0003-entity-cache-per-caller' },
        { text: '4. Event keys table', link: '/decisions/0004-event-keys-in-plugin-table' },
        { text: '5. Partition governor', link: '/decisions/0005-partition-governor' },
        { text: '6. Own console build', link: '/decisions/0006-own-console-build' },
        { text: '7. Node 22 through npm', link: '/decisions/0007-node-22-through-npm' },
        { text: '8. Provider per test worker', link: '/decisions/0008-one-provider-per-test-worker' },
        { text: '9. Guard in the tracker row', link: '/decisions/0009-guard-in-the-tracker-row' },
        { text: '10. Inclusive watermark', link: '/decisions/0010-inclusive-watermark-with-settle' },
      ] },
    ],
  },
})
