/** What the real @cap-js/audit-logging plugin prints (its console sink) while a request runs. */
import { formatWithOptions } from 'node:util'

/** Console output while `fn` runs, until a SensitiveDataRead shows or `settle` ms pass (the audit log is queued). */
export async function consoleDuring(fn: () => Promise<unknown>, settle = 1500): Promise<string> {
  const lines: string[] = []
  const spy = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => { lines.push(formatWithOptions({ depth: 6 }, ...args)) })
  try {
    await fn()
    for (let waited = 0; waited < settle && !lines.some(l => l.includes('SensitiveDataRead')); waited += 100) await new Promise(r => setTimeout(r, 100))
  } finally {
    spy.mockRestore()
  }
  return lines.join('\n')
}
