// The demo's servers listen on the loopback interface only: cds.server calls app.listen(port),
// which listens on every interface. DEMO_HOST overrides it (e.g. 0.0.0.0 inside a container).
const cds = require('@sap/cds')

cds.on('bootstrap', app => {
  const listen = app.listen.bind(app)
  app.listen = (port, ...rest) => listen(port, process.env.DEMO_HOST || '127.0.0.1', ...rest)
})
