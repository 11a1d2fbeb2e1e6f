import type { CallOptions, Core, RecordsPage, Run } from "./core.js";

/** Options of RunHandle.wait. */
export interface WaitOptions {
  /** Pause between two reads of the run, in ms (default 1000). */
  pollMs?: number;
  /** Ends the wait. */
  signal?: AbortSignal;
}

/**
 * The handle of an async run: `wait()` until it settles, `cancel()` it,
 * and `for await (const rec of handle)` over its records, a page of 1,000
 * at a time.
 */
export class RunHandle<T = Record<string, unknown>> implements AsyncIterable<T> {
  constructor(
    private readonly core: Core,
    /** The run id, `ext_…`. */
    readonly id: string,
    /** The run as last read. */
    public run?: Run<T>,
  ) {}

  /** The run as it stands (GET /v1/extractions/{id}). */
  async status(opts: CallOptions = {}): Promise<Run<T>> {
    const r = await this.core.api.GET("/v1/extractions/{id}", { params: { path: { id: this.id } }, signal: opts.signal });
    this.run = this.core.unwrap<Run<T>>(r);
    return this.run;
  }

  /** Reads the run until it is no longer running: completed, failed (`error` says why) or cancelled. */
  async wait(opts: WaitOptions = {}): Promise<Run<T>> {
    for (;;) {
      const run = await this.status({ signal: opts.signal });
      if (run.status !== "running") return run;
      await new Promise((resolve) => setTimeout(resolve, opts.pollMs ?? 1000));
      opts.signal?.throwIfAborted();
    }
  }

  /**
   * Cancels the run (POST /v1/extractions/{id}/cancel): the cancelled run,
   * or the run still running when its worker on another node has not
   * settled it yet. A settled run throws 409 run_finished.
   */
  async cancel(opts: CallOptions = {}): Promise<Run<T>> {
    const r = await this.core.api.POST("/v1/extractions/{id}/cancel", { params: { path: { id: this.id } }, signal: opts.signal });
    this.run = this.core.unwrap<Run<T>>(r);
    return this.run;
  }

  /** One page of a settled run's records (limit 1–1000). */
  async page(limit = 1000, cursor?: string, opts: CallOptions = {}): Promise<RecordsPage<T>> {
    const query = cursor === undefined ? { limit } : { limit, cursor };
    const r = await this.core.api.GET("/v1/extractions/{id}/records", { params: { path: { id: this.id }, query }, signal: opts.signal });
    return this.core.unwrap<RecordsPage<T>>(r);
  }

  /** The records of a settled run, a page of 1,000 at a time (a run still running throws 409 run_not_finished: wait first). */
  async *records(opts: CallOptions = {}): AsyncGenerator<T> {
    let cursor: string | undefined;
    do {
      const page = await this.page(1000, cursor, opts);
      yield* page.data;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.records();
  }
}
