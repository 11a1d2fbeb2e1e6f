// Where tests/sdk_test.go started the gateway, the simulator and the
// dropping proxy; without SDR_BASE_URL (the suite run on its own) the
// end-to-end tests are skipped.
import { SocialDataRouter, type ClientOptions } from "../src/index.js";

// The end-to-end tests run on test keys (sdr_test_…, docs/testmode.md):
// records from the offers' example payloads, no upstream, the account's
// test balance; the magic inputs below force each failure a backend must
// handle. tests/sdk_test.go runs them, checks that the simulator saw no
// call, then runs the live-key part (live.test.ts).

/** Magic inputs of pro_net/profile.info (docs/testmode.md, "Magic inputs"). */
export const magic = {
  providerError: "https://www.linkedin.com/in/sdr-test-provider-error",
  softTimeout: "https://www.linkedin.com/in/sdr-test-soft-timeout",
  rateLimited: "https://www.linkedin.com/in/sdr-test-rate-limited",
  failover: "https://www.linkedin.com/in/sdr-test-failover",
  empty: "https://www.linkedin.com/in/sdr-test-empty",
  slow: "https://www.linkedin.com/in/sdr-test-slow",
};

export const env = {
  base: process.env.SDR_BASE_URL ?? "",
  admin: process.env.SDR_ADMIN_URL ?? "",
  flaky: process.env.SDR_FLAKY_URL ?? "",
  /** The Retry-After (seconds) of sdr-test-rate-limited. */
  testRetryAfter: Number(process.env.SDR_TEST_RETRY_AFTER),
};

/** Skips a test when the gateway's environment is not set. */
export const e2e = env.base && env.admin ? {} : { skip: "SDR_BASE_URL/SDR_ADMIN_URL not set: the end-to-end tests run from tests/sdk_test.go (make test)" };

export const profileURL = "https://www.linkedin.com/in/rbranson";

/** Calls an admin or simulator route and returns its JSON answer. */
export async function call<T = unknown>(method: string, url: string, body?: unknown): Promise<T> {
  // Node's fetch sends Sec-Fetch-Mode, after which Caddy's admin endpoint
  // wants an Origin it allows: its own address.
  const init: RequestInit = { method, headers: { "Content-Type": "application/json", Origin: new URL(url).origin } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

let n = 0;

/** Creates an account with a live balance and returns its id. */
export async function newAccount(balance: number): Promise<string> {
  const id = `sdk-ts-${Date.now()}-${++n}`;
  await call("POST", `${env.admin}/sdr/accounts`, { id, balance });
  return id;
}

/** Creates a key of an account in a mode ("test" or "live") and returns its id and secret. */
export async function key(account: string, mode: "test" | "live", creditLimit?: Record<string, unknown>): Promise<{ id: string; key: string }> {
  return call<{ id: string; key: string }>("POST", `${env.admin}/sdr/accounts/${account}/keys`, {
    name: `sdk-ts ${mode}`,
    mode,
    ...(creditLimit ? { credit_limit: creditLimit } : {}),
  });
}

/**
 * Creates an account and a test key whose test balance is `balance`, and
 * returns the account's test twin (the account that owns the key's runs,
 * webhook endpoints and test balance) and the key.
 */
export async function account(balance: number, creditLimit?: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const id = await newAccount(0);
  const k = await key(id, "test", creditLimit);
  const twin = `${id}~test`; // created with the first test key (docs/testmode.md, Isolation)
  const { test_balance } = await call<{ test_balance: number }>("GET", `${env.admin}/sdr/accounts/${id}`);
  if (balance !== test_balance) await call("POST", `${env.admin}/sdr/accounts/${twin}/credits`, { amount: balance - test_balance });
  return { id: twin, key: k.key };
}

export const client = (key: string, opts: ClientOptions = {}) => new SocialDataRouter(key, { baseUrl: env.base, ...opts });

export async function balance(c: SocialDataRouter): Promise<number> {
  return (await c.balance()).balance;
}

export const near = (a: number, b: number) => Math.abs(a - b) < 1e-9;
