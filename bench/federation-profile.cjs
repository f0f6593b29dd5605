/**
 * Preloaded into the consumer by bench/federation-delegate.mjs when BENCH_CPU_PROF=<dir>: SIGUSR2
 * starts a CPU profile, the next SIGUSR2 writes it to <dir>/<label>.cpuprofile (label from the
 * file <dir>/label), so a profile covers one measured series and not the start-up.
 */
const { Session } = require('node:inspector')
const { readFileSync, writeFileSync } = require('node:fs')
const path = require('node:path')

const dir = process.env.FEDERATION_CPU_PROF
const session = new Session()
session.connect()
let running = false
process.on('SIGUSR2', () => {
  if (!running) {
    running = true
    session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 200 }, () => session.post('Profiler.start')))
    return
  }
  running = false
  session.post('Profiler.stop', (error, result) => {
    if (error) return console.error(error)
    let label = 'series'
    try { label = readFileSync(path.join(dir, 'label'), 'utf8').trim() } catch { /* default label */ }
    writeFileSync(path.join(dir, `${label}.cpuprofile`), JSON.stringify(result.profile))
    writeFileSync(path.join(dir, `${label}.done`), '')
  })
})
