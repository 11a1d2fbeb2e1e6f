// Where tests/sdk_test.go started the gateway, the simulator and the
// dropping proxy; without SDR_BASE_URL (the suite run on its own) the
// end-to-end tests are skipped.
import { SocialDataRouter, type ClientOptions } from "../src/index.js";

/**
 * The kind of key the end-to-end tests create (SDR_KEY_KIND, set in
 * tests/sdk_test.go): live keys with credits granted through the admin API
 * until test mode (sdr_test_ keys that charge nothing and reach no
 * upstream) lands; then "test", sent as the key's "mode".
 */
export const keyKind = process.env.SDR_KEY_KIND ?? "live";

export const env = {
  base: process.env.SDR_BASE_URL ?? "",
  admin: process.env.SDR_ADMIN_URL ?? "",
  flaky: process.env.SDR_FLAKY_URL ?? "",
  sim: process.env.SDR_SIM_URL ?? "",
  faults: JSON.parse(process.env.SDR_SIM_FAULTS ?? "[]") as Array<Record<string, unknown>>,
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

/** Creates an account with a balance and a key (keyKind) for it. */
export async function account(balance: number, creditLimit?: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const id = `sdk-ts-${Date.now()}-${++n}`;
  await call("POST", `${env.admin}/sdr/accounts`, { id, balance });
  const k = await call<{ key: string }>("POST", `${env.admin}/sdr/accounts/${id}/keys`, {
    name: `sdk-ts ${keyKind}`,
    ...(keyKind !== "live" ? { mode: keyKind } : {}), // issue 35's {"mode": "test"}
    ...(creditLimit ? { credit_limit: creditLimit } : {}),
  });
  return { id, key: k.key };
}

export const client = (key: string, opts: ClientOptions = {}) => new SocialDataRouter(key, { baseUrl: env.base, ...opts });

export async function balance(c: SocialDataRouter): Promise<number> {
  return (await c.balance()).balance;
}

export const near = (a: number, b: number) => Math.abs(a - b) < 1e-9;

/** Sets the simulator's faults for pro_net/profile.info (patched), and returns their reset. */
export async function faults(patch: Record<string, unknown> = {}): Promise<() => Promise<void>> {
  for (const f of env.faults) await call("POST", `${env.sim}/_sim/faults`, { ...f, ...patch });
  return async () => {
    await call("DELETE", `${env.sim}/_sim/faults`);
  };
}
