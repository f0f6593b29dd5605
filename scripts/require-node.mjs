// First step of `npm test` and `npm start`: a clear word instead of a crash deep inside @sap/cds 10
// when the Node that runs the scripts is older than 22. `npm run` puts node_modules/.bin first on PATH,
// where `npm ci` linked the Node 22 of tools/node22 (Linux x64/arm64, macOS arm64/x64, Windows x64);
// elsewhere the machine's own Node runs them.
const BROUGHT = ['linux-x64', 'linux-arm64', 'darwin-arm64', 'darwin-x64', 'win32-x64']
const major = Number(process.versions.node.split('.')[0])
if (major < 22) {
  const platform = `${process.platform}-${process.arch}`
  const advice = BROUGHT.includes(platform)
    ? 'npm ci installs Node 22 for this platform into node_modules/.bin: run the scripts through npm (npm test, npm start, npx …), or run npm ci if node_modules is older than this setup'
    : `npm ci brings Node 22 for ${BROUGHT.join(', ')}, not for ${platform}: install Node 22 or newer yourself (nodejs.org, nvm, fnm, volta)`
  console.error(`cap-data-pipeline's scripts need Node 22 or newer (@sap/cds 10); they ran on ${process.version} (${process.execPath}).\n${advice}.`)
  process.exit(1)
}
