// CAP discovers plugins as <package>/cds-plugin.js: load the compiled TypeScript.
module.exports = require('./dist/cds-plugin.js')
