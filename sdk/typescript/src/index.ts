/**
 * The TypeScript client of the Social Data Router API. Types and the named
 * call of every catalogue service (client.extract.pro_net.companyInfo) are
 * generated from the gateway's OpenAPI document (schema.gen.ts by
 * openapi-typescript, services.gen.ts by scripts/sdkgen; make sdk).
 */
import type { components } from "./schema.gen.js";
import { Core, type CallOptions, type ClientOptions, type Run, type SearchRun } from "./core.js";
import { RunHandle } from "./run.js";
import { extractCalls } from "./services.gen.js";

export type { components, paths } from "./schema.gen.js";
export type { CallOptions, ClientOptions, RecordsPage, Run, SearchRun } from "./core.js";
export { SdrError, NetworkError } from "./errors.js";
export type { ErrorDetails } from "./errors.js";
export type { RetryPolicy } from "./retry.js";
export { RunHandle, type WaitOptions } from "./run.js";
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from "./webhooks.js";
export { services, type ExtractBody, type ExtractPath } from "./services.gen.js";

/** The body of POST /v1/search. */
export type SearchBody = NonNullable<import("./schema.gen.js").paths["/v1/search"]["post"]["requestBody"]>["content"]["application/json"];

/** A client of the API with one key. */
export class SocialDataRouter {
  /** The typed openapi-fetch client of the whole document, for what the helpers below do not cover. */
  readonly api: Core["api"];
  /** The catalogue's services, a group per platform: `client.extract.pro_net.companyInfo({ url })`. */
  readonly extract: ReturnType<typeof extractCalls>;
  private readonly core: Core;

  constructor(key: string, opts: ClientOptions = {}) {
    this.core = new Core(key, opts);
    this.api = this.core.api;
    this.extract = extractCalls(this.core);
  }

  /** POST /v1/extract/{platform}/{service} with any body, records untyped: for a service newer than this package. */
  extractRaw(platform: string, service: string, body: unknown, opts?: CallOptions): Promise<Run> {
    return this.core.extract(extractPath(platform, service), body, opts);
  }

  /** Submits POST /v1/extract/{platform}/{service} with `Prefer: respond-async`; the typed form is `client.extract.<platform>.<service>Async`. */
  extractAsync(platform: string, service: string, body: unknown, opts?: CallOptions): Promise<RunHandle> {
    return this.core.extractAsync(extractPath(platform, service), body, opts);
  }

  /** The handle of a run by its id, for a run submitted earlier or elsewhere. */
  run<T = Record<string, unknown>>(id: string): RunHandle<T> {
    return new RunHandle<T>(this.core, id);
  }

  /** POST /v1/search; `pagination.next_cursor` is the `cursor` of the next page. */
  async search<T = Record<string, unknown>>(body: SearchBody, opts?: CallOptions): Promise<SearchRun<T>> {
    return (await this.core.post<SearchRun<T>>("/v1/search", body, opts)).run;
  }

  /** GET /v1/account/balance. */
  async balance(): Promise<components["schemas"]["Balance"]> {
    return this.core.unwrap(await this.core.api.GET("/v1/account/balance"));
  }

  /** The catalogue, GET /v1/services. */
  async services(): Promise<components["schemas"]["CatalogueList"]> {
    return this.core.unwrap(await this.core.api.GET("/v1/services"));
  }
}

const extractPath = (platform: string, service: string) =>
  `/v1/extract/${encodeURIComponent(platform)}/${encodeURIComponent(service)}`;
