// `npm run test:load`: the whole `npm test` on a busy machine (issue 21) — two CPU-bound processes
// run beside it from its start to its end, so that waits on fixed sleeps or assumed timings show up
// as failures. The burners are always ended, also when the suite fails or this script is
// interrupted. Exits with the suite's exit code; prints the wall time.
//
// Env: LOAD_BURNERS  how many CPU-bound processes (default 2)
//      LOAD_COMMAND  what to run instead of `npm test` (a shell command, e.g. `npx vitest run --project postgres`)
//      VITEST_SUMMARY_FILE  passed on (the summary reporter writes its counts there)
import { spawn, spawnSync } from 'node:child_process'

const count = Number(process.env.LOAD_BURNERS ?? 2)
const command = process.env.LOAD_COMMAND ?? 'npm test'

// each burner spins in its own process, on the same Node that runs this script
const burners = Array.from({ length: count }, () =>
  spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }))
console.log(`test:load: ${count} CPU-bound processes (pids ${burners.map(b => b.pid).join(', ')}) beside \`${command}\``)

function stopBurners() {
  for (const burner of burners) if (burner.exitCode === null && burner.signalCode === null) burner.kill('SIGKILL')
}
process.on('exit', stopBurners)

const started = Date.now()
// its own process group: an interrupt ends the whole suite (npm, vitest, the apps it started), not only the shell
const suite = spawn(command, { shell: true, stdio: 'inherit', detached: true })
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    try {
      // Windows has no process groups: taskkill ends the tree
      if (process.platform === 'win32') spawnSync('taskkill', ['/pid', String(suite.pid), '/T', '/F'], { stdio: 'ignore' })
      else process.kill(-suite.pid, signal)
    } catch { /* already ended */ }
    stopBurners()
    process.exit(130)
  })
}
suite.on('exit', (code, signal) => {
  stopBurners()
  const seconds = Math.round((Date.now() - started) / 1000)
  console.log(`test:load: \`${command}\` ended (${signal ?? `exit ${code}`}) after ${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s with ${count} CPU-bound processes beside it`)
  process.exit(code ?? 1)
})
