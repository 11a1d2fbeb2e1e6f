import type { components } from "./schema.gen.js";

/** The error object of the API's envelope, with its code-specific fields. */
export type ErrorDetails = components["schemas"]["Error"]["error"];

/**
 * An error answer of the API: its status, and the code and type of its
 * envelope (`{"error": {"code", "message", "type", …}}`, docs/errors.md).
 *
 * ```ts
 * try { … } catch (e) {
 *   if (e instanceof SdrError && e.code === "insufficient_credits") { … }
 * }
 * ```
 */
export class SdrError extends Error {
  override readonly name = "SdrError";
  /** HTTP status. */
  readonly status: number;
  /** e.g. `invalid_input_format`; `""` when the answer was not the API's envelope (a proxy's). */
  readonly code: string;
  /** validation, authentication, billing, not_found, rate_limit, provider, timeout, internal. */
  readonly type: string;
  /** Retry-After in seconds, `undefined` when none. */
  readonly retryAfter: number | undefined;
  /** The run of the call (X-Run-Id or the error's run_id), when one was stored. */
  readonly runId: string | undefined;
  /** The Idempotency-Key the call was sent with. */
  readonly idempotencyKey: string | undefined;
  /** The error object as answered. */
  readonly details: ErrorDetails | undefined;

  constructor(init: {
    status: number;
    code: string;
    type: string;
    message: string;
    retryAfter?: number | undefined;
    runId?: string | undefined;
    idempotencyKey?: string | undefined;
    details?: ErrorDetails | undefined;
  }) {
    super(init.code ? `${init.status} ${init.code} (${init.type}): ${init.message}` : `HTTP ${init.status}: ${init.message}`);
    this.status = init.status;
    this.code = init.code;
    this.type = init.type;
    this.retryAfter = init.retryAfter;
    this.runId = init.runId;
    this.idempotencyKey = init.idempotencyKey;
    this.details = init.details;
  }

  /** A 429 for rate (wait and retry), not for money. */
  get isRateLimit(): boolean {
    return this.status === 429 && this.code !== "credit_limit_exceeded";
  }

  /** A refusal for money: 402 insufficient_credits, or the key's credit limit (429 credit_limit_exceeded). */
  get isMoney(): boolean {
    return this.code === "insufficient_credits" || this.code === "credit_limit_exceeded";
  }

  /** The typed error of an error answer and its body (parsed JSON or text). */
  static from(response: Response, body: unknown, idempotencyKey?: string): SdrError {
    const env = (typeof body === "object" && body !== null ? (body as { error?: ErrorDetails }).error : undefined) ?? undefined;
    const hasEnvelope = env !== undefined && typeof env.code === "string";
    const runId = response.headers.get("X-Run-Id") ?? (hasEnvelope ? env.run_id : undefined) ?? undefined;
    return new SdrError({
      status: response.status,
      code: hasEnvelope ? env.code : "",
      type: hasEnvelope ? env.type : "",
      message: hasEnvelope ? env.message : typeof body === "string" ? body.slice(0, 200) : response.statusText,
      retryAfter: retryAfterSeconds(response.headers),
      runId: runId || undefined,
      idempotencyKey,
      details: hasEnvelope ? env : undefined,
    });
  }
}

/**
 * A call that got no answer after its retries (the connection dropped, was
 * refused or timed out). A POST was sent with `idempotencyKey` each time:
 * calling again with it answers the run the call started, charged once.
 */
export class NetworkError extends Error {
  override readonly name = "NetworkError";
  constructor(
    readonly cause: unknown,
    readonly idempotencyKey: string | undefined,
    readonly attempts: number,
  ) {
    super(`no answer after ${attempts} attempts (Idempotency-Key ${idempotencyKey ?? "none"}): ${String(cause)}`);
  }
}

/** Retry-After in seconds (delta-seconds or an HTTP date). */
export function retryAfterSeconds(h: Headers): number | undefined {
  const v = h.get("Retry-After");
  if (!v) return undefined;
  const n = Number(v);
  if (Number.isFinite(n)) return n;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, (t - Date.now()) / 1000);
}
