import { NetworkError, retryAfterSeconds } from "./errors.js";

/** How the client retries. */
export interface RetryPolicy {
  /** Retries after the first attempt (default 3). */
  maxRetries: number;
  /** The longest Retry-After, in seconds, the client waits out itself (default 60); a longer one is thrown. */
  maxRetryAfter: number;
  /** First wait after a network error, in ms (default 500; doubled each retry, with jitter). */
  backoffMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxRetries: 3, maxRetryAfter: 60, backoffMs: 500 };

const sleep = (ms: number, signal?: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      reject(signal.reason);
    }, { once: true });
  });

/**
 * The seconds to wait before sending an error answer's call again, or
 * `undefined` when it must not be retried. Every POST carries an
 * Idempotency-Key (the same on each retry), so a retried POST answers the
 * run the first attempt started, charged once (docs/async.md). Retried: a
 * 429 for rate (not `credit_limit_exceeded`, which is money) with a
 * Retry-After it may wait; 409 `idempotency_key_in_use` (the first attempt
 * still runs); a 503 with Retry-After (refused before a run was stored, so
 * the key is free); a 502 or 504 that is not the gateway's (no error code,
 * no run id: a proxy's), which the key makes safe to send again. The
 * gateway's own 502/504 names its settled run: the same key would only
 * replay it.
 */
export function retryDelay(status: number, code: string, runId: string | undefined, retryAfter: number | undefined, p: RetryPolicy): number | undefined {
  const fits = retryAfter !== undefined && retryAfter > 0 && retryAfter <= p.maxRetryAfter;
  if (status === 429) return fits && code !== "credit_limit_exceeded" ? retryAfter : undefined;
  if (status === 409 && code === "idempotency_key_in_use") return Math.max(retryAfter ?? 1, 1);
  if (status === 503) return fits ? retryAfter : undefined;
  if ((status === 502 || status === 504) && !code && !runId) return p.backoffMs / 1000;
  return undefined;
}

/** A random (version 4) UUID, the default Idempotency-Key. */
export const newIdempotencyKey = (): string => crypto.randomUUID();

/**
 * A fetch that adds an Idempotency-Key to every POST that has none and
 * retries as retryDelay allows; openapi-fetch sends every call through it.
 */
export function retryingFetch(policy: RetryPolicy, base: typeof fetch = fetch) {
  return async (input: Request): Promise<Response> => {
    const body = input.method === "GET" || input.method === "HEAD" ? undefined : await input.arrayBuffer();
    const headers = new Headers(input.headers);
    if (input.method === "POST" && !headers.has("Idempotency-Key")) headers.set("Idempotency-Key", newIdempotencyKey());
    const key = headers.get("Idempotency-Key") ?? undefined;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await base(new Request(input.url, { method: input.method, headers, body, signal: input.signal }));
      } catch (err) {
        if (input.signal?.aborted || attempt >= policy.maxRetries) throw new NetworkError(err, key, attempt + 1);
        const ms = policy.backoffMs * 2 ** attempt;
        await sleep(ms / 2 + Math.random() * (ms / 2), input.signal);
        continue;
      }
      if (res.ok || attempt >= policy.maxRetries) return res;
      const text = await res.text();
      let code = "";
      let runId = res.headers.get("X-Run-Id") ?? undefined;
      try {
        const e = (JSON.parse(text) as { error?: { code?: unknown; run_id?: unknown } }).error;
        if (typeof e?.code === "string") code = e.code;
        if (!runId && typeof e?.run_id === "string") runId = e.run_id;
      } catch {
        // not the API's envelope
      }
      const wait = retryDelay(res.status, code, runId, retryAfterSeconds(res.headers), policy);
      if (wait === undefined) return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
      await sleep(wait * 1000, input.signal);
    }
  };
}
