const cds = require('@sap/cds')

module.exports = class DemoService extends cds.ApplicationService {
  init() {
    this.on('runPipeline', async req => {
      const { pipeline, mode } = req.data
      const engine = await cds.connect.to('data-pipeline')
      try {
        const { runId, done } = await engine.execute(pipeline, { mode: mode || undefined, trigger: 'manual' })
        const { status, statistics } = await done
        return { runId, status, ...statistics }
      } catch (error) {
        // the engine's errors carry the HTTP status: 404 unknown pipeline, 400 bad mode, 409 already running
        return req.reject(error.status ?? error.statusCode ?? 500, error.message)
      }
    })
    return super.init()
  }
}
