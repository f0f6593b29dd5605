/** The `spawn` engine: a timer in this process. */

/** A repeating in-process timer that never overlaps itself and never keeps the process alive. */
export class SpawnTimer {
  private handle?: NodeJS.Timeout
  constructor(private readonly every: number, private readonly tick: () => Promise<unknown>) {}

  start(): this {
    this.stop()
    const loop = () => {
      this.handle = setTimeout(() => {
        this.tick().catch(() => undefined).finally(() => { if (this.handle) loop() })
      }, this.every)
      this.handle.unref()
    }
    loop()
    return this
  }

  stop(): void {
    if (this.handle) clearTimeout(this.handle)
    this.handle = undefined
  }
}
