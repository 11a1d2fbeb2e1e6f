import createFetchClient, { type Client as FetchClient } from "openapi-fetch";
import type { components, paths } from "./schema.gen.js";
import { SdrError } from "./errors.js";
import { defaultRetryPolicy, newIdempotencyKey, retryingFetch, type RetryPolicy } from "./retry.js";
import { RunHandle } from "./run.js";

type Schemas = components["schemas"];

/** A run of an extract service with its records typed T. */
export type Run<T = Record<string, unknown>> = Omit<Schemas["Run"], "data"> & { data: T[] };
/** A search run with its records typed T. */
export type SearchRun<T = Record<string, unknown>> = Omit<Schemas["SearchRun"], "data"> & { data: T[] };
/** A page of a run's records. */
export type RecordsPage<T = Record<string, unknown>> = Omit<Schemas["RecordsPage"], "data"> & { data: T[] };

/** Options of one call. */
export interface CallOptions {
  /** The call's Idempotency-Key (default: a random UUID per call, the same on each retry). */
  idempotencyKey?: string;
  /** Aborts the call and its retries. */
  signal?: AbortSignal;
  /** More request headers. */
  headers?: Record<string, string>;
}

/** Options of the client. */
export interface ClientOptions {
  /** The API's address, scheme and host (default https://api.socialdatarouter.com). */
  baseUrl?: string;
  /** Retries (see RetryPolicy). */
  retry?: Partial<RetryPolicy>;
  /** The fetch underneath (default globalThis.fetch). */
  fetch?: typeof fetch;
}

/**
 * Core holds the typed openapi-fetch client (its fetch adds the
 * Idempotency-Key and retries) and turns error answers into SdrError.
 */
export class Core {
  readonly api: FetchClient<paths>;

  constructor(key: string, opts: ClientOptions = {}) {
    const policy = { ...defaultRetryPolicy, ...opts.retry };
    this.api = createFetchClient<paths>({
      baseUrl: (opts.baseUrl ?? "https://api.socialdatarouter.com").replace(/\/+$/, ""),
      headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), Accept: "application/json", "User-Agent": "sdr-typescript" },
      fetch: retryingFetch(policy, opts.fetch ?? globalThis.fetch),
    });
  }

  /** The data of an openapi-fetch answer, or its error thrown as SdrError. */
  unwrap<T>(r: { data?: unknown; error?: unknown; response: Response }, idempotencyKey?: string): T {
    if (!r.response.ok) throw SdrError.from(r.response, r.error, idempotencyKey);
    return r.data as T;
  }

  /** POSTs an extract call (path from the document) and returns its run. */
  async post<T>(path: string, body: unknown, opts: CallOptions = {}, extra: Record<string, string> = {}): Promise<{ run: T; response: Response }> {
    const idempotencyKey = opts.idempotencyKey ?? newIdempotencyKey();
    // The named calls pass the document's paths, which openapi-fetch types;
    // this shared path is typed by the generated signatures instead.
    const r = await (this.api.POST as unknown as (p: string, init: object) => Promise<{ data?: unknown; error?: unknown; response: Response }>)(path, {
      body,
      headers: { ...opts.headers, ...extra, "Idempotency-Key": idempotencyKey },
      signal: opts.signal,
    });
    return { run: this.unwrap<T>(r, idempotencyKey), response: r.response };
  }

  /** A synchronous extract call: the completed run. */
  async extract<T>(path: string, body: unknown, opts?: CallOptions): Promise<Run<T>> {
    return (await this.post<Run<T>>(path, body, opts)).run;
  }

  /** An extract call with `Prefer: respond-async`: the run's handle. */
  async extractAsync<T>(path: string, body: unknown, opts?: CallOptions): Promise<RunHandle<T>> {
    const { run } = await this.post<Run<T>>(path, body, opts, { Prefer: "respond-async" });
    return new RunHandle<T>(this, run.id, run);
  }
}
