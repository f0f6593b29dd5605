/**
 * The order in which `npm test` starts its files (vitest.config.ts `sequence.sequencer`). The
 * unit, integration and postgres files share three workers, so they are started longest first: a
 * slow file (a scale-out test) started last would keep the others waiting for it. The browser files
 * run one at a time in their own vitest run beside them (scripts/test.mjs), in the same order.
 * The duration is the file's last one (vitest's results cache; a failed file first, as vitest does).
 * Files without one (a fresh clone) go by project, the slow ones first (browser, PostgreSQL,
 * integration, unit), and within a project larger files first.
 */
import fs from 'node:fs'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/** Projects by how long their files take, slowest first (for files that have no duration yet). */
const SLOW_FIRST = ['e2e', 'postgres', 'integration', 'unit']

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const known = new Map(files.map(spec => [spec, this.ctx.cache.getTestSpecificationResult(spec)]))
    const size = (spec: TestSpecification) => fs.statSync(spec.moduleId, { throwIfNoEntry: false })?.size ?? 0
    const rank = (spec: TestSpecification) => {
      const at = SLOW_FIRST.indexOf(spec.project.name)
      return at < 0 ? SLOW_FIRST.length : at
    }
    return [...files].sort((a, b) => {
      const resultA = known.get(a)
      const resultB = known.get(b)
      if (resultA && resultB) {
        if (resultA.failed !== resultB.failed) return resultA.failed ? -1 : 1
        return resultB.duration - resultA.duration
      }
      if (resultA || resultB) return resultA ? 1 : -1 // a new file first: its duration is unknown
      return rank(a) - rank(b) || size(b) - size(a)
    })
  }
}
