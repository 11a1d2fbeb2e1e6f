// The end-to-end suite against the real gateway (tests/sdk_test.go starts
// it with the simulator and passes their addresses in the environment), on
// test keys: the upstream failures are the magic inputs of docs/testmode.md.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { NetworkError, SdrError, SocialDataRouter, services, verifyWebhook, WebhookVerificationError, type components } from "../src/index.js";
import { account, balance, call, client, e2e, env, key, magic, near, newAccount, profileURL } from "./env.js";

const doc = JSON.parse(readFileSync(new URL("../../../openapi.json", import.meta.url) /* from dist/test/ */, "utf8")) as {
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
};

test("every catalogue service by its generated call, records of its schema", e2e, async (t) => {
  const { key } = await account(100);
  const c = client(key);
  const cat = await c.services();
  assert.equal(cat.data.length, services.length, "the catalogue and the SDK list as many services: run make sdk");
  for (const entry of cat.data) {
    await t.test(`${entry.platform}/${entry.service}`, async () => {
      const info = services.find((s) => s.platform === entry.platform && s.service === entry.service);
      assert.ok(info, `${entry.platform}/${entry.service} has no generated call: run make sdk`);
      const group = c.extract[info.platform as keyof SocialDataRouter["extract"]] as unknown as Record<string, (body: unknown) => Promise<{ status: string; data: Record<string, unknown>[] }>>;
      const run = (await group[info.method]!({ [info.inputField]: [entry.accepts[0]!.example], limit: 3 })) as { status: string; livemode?: boolean; data: Record<string, unknown>[] };
      assert.equal(run.status, "completed");
      assert.equal(run.livemode, false, "a test key's run");
      assert.ok(run.data.length > 0, "records");
      const props = doc.components.schemas[info.record]?.properties;
      assert.ok(props, `record schema ${info.record}`);
      for (const rec of run.data) {
        for (const field of Object.keys(rec)) assert.ok(field in props, `${field} is not a field of ${info.record}`);
      }
    });
  }
});

// limit 1: test mode answers a query with the example's two records.
test("search with a cursor", e2e, async () => {
  const { key } = await account(100);
  const c = client(key);
  const body = { provider: "source_a/maps/place.search", queries: ["coffee in Lisbon"], limit: 1 };
  const first = await c.search<components["schemas"]["PlaceSearchResult"]>(body);
  assert.equal(first.status, "completed");
  assert.equal(first.data.length, 1);
  const cursor = first.pagination.next_cursor;
  assert.ok(cursor, "a next_cursor");
  const second = await c.search<components["schemas"]["PlaceSearchResult"]>({ ...body, cursor });
  assert.equal(second.status, "completed");
  assert.notEqual(second.id, first.id);
  assert.ok(second.data.length > 0);
  assert.ok(near(second.credits_used, first.credits_used * second.data.length), "the page is billed for its records only");
  assert.notDeepEqual(second.data[0], first.data[0], "the second page is not the first");
});

// Test mode gives photo_net/profile.info one record per input
// (records_per_input), so the run has 1,000 inputs; its last is
// sdr-test-slow, which keeps the run running for 5 s, so that wait() polls.
test("an async run of 1,000 records, waited on and iterated", e2e, async () => {
  const { key } = await account(100);
  const c = client(key);
  const before = await balance(c);
  const urls = Array.from({ length: 999 }, (_, i) => `https://www.instagram.com/user_${i}`);
  urls.push("https://www.instagram.com/nasa?sdr-test-slow");
  const submitted = Date.now();
  const h = await c.extract.photo_net.profileInfoAsync({ urls, limit: 1000 });
  assert.match(h.id, /^ext_/);
  assert.equal(h.run?.status, "running");
  const run = await h.wait({ pollMs: 100 });
  assert.equal(run.status, "completed");
  assert.equal(run.pagination.total, 1000);
  assert.ok(Date.now() - submitted >= 4000, "wait() returned before sdr-test-slow's 5 s");
  let n = 0;
  for await (const rec of h) {
    n++;
    assert.equal(rec.source, "photo_net");
  }
  assert.equal(n, 1000);
  assert.ok(run.credits_used > 0 && near(before - (await balance(c)), run.credits_used), "charged the run's credits_used");
});

test("cancel of a run sdr-test-slow holds", e2e, async () => {
  const { key } = await account(100);
  const c = client(key);
  const before = await balance(c);
  const h = await c.extract.pro_net.profileInfoAsync({ url: magic.slow });
  await assert.rejects(h.page(10), (e) => e instanceof SdrError && e.status === 409 && e.code === "run_not_finished");
  const run = await h.cancel();
  assert.equal(run.status, "cancelled");
  assert.equal(run.credits_used, 0);
  await assert.rejects(h.cancel(), (e) => e instanceof SdrError && e.status === 409 && e.code === "run_finished");
  assert.equal(await balance(c), before);
});

test("magic outcomes that complete: failover, empty", e2e, async () => {
  const { key } = await account(100);
  const c = client(key, { retry: { maxRetries: 0 } });
  let before = await balance(c);
  const run = await c.extract.pro_net.profileInfo({ url: magic.failover });
  assert.equal(run.status, "completed");
  assert.ok(run.data.length > 0);
  const [first, second] = run.attempts ?? [];
  assert.ok(first && second && run.attempts?.length === 2, "two attempts");
  assert.equal(first.outcome, "upstream_5xx");
  assert.equal(second.outcome, "ok");
  assert.notEqual(first.offer, second.offer);
  assert.equal(run.served_by, second.offer, "served by the next offer");
  assert.ok(run.credits_used > 0 && near(before - (await balance(c)), run.credits_used), "charged the serving offer's records");
  before = await balance(c);
  const empty = await c.extract.pro_net.profileInfo({ url: magic.empty });
  assert.equal(empty.status, "completed");
  assert.equal(empty.data.length, 0);
  assert.equal(empty.credits_used, 0);
  assert.equal(await balance(c), before);
});

test("a dropped connection is retried with the same Idempotency-Key and charged once", e2e, async () => {
  assert.ok(env.flaky, "SDR_FLAKY_URL");
  const { key } = await account(100);
  const c = new SocialDataRouter(key, { baseUrl: env.flaky, retry: { backoffMs: 50 } });
  const before = await balance(c);
  const ikey = `sdk-ts-drop-${Date.now()}`;
  const run = await c.extract.pro_net.profileInfo({ url: profileURL }, { idempotencyKey: ikey });
  const log = await call<Array<{ key: string; dropped: boolean }>>("GET", `${env.flaky}/_flaky/log`);
  assert.deepEqual(log.filter((l) => l.key === ikey).map((l) => l.dropped), [true, false], "a dropped attempt and its retry");
  const after = await balance(c); // the test balance: the key is a test key
  assert.equal(run.livemode, false, "a test key's run, so the balance checked is the test balance");
  assert.ok(run.credits_used > 0 && near(before - after, run.credits_used), `balance ${before} → ${after} for a run of ${run.credits_used}`);
  // Without a key of its own the client still sends one.
  const again = await c.extract.pro_net.profileInfo({ url: profileURL });
  assert.ok(near(after - (await balance(c)), again.credits_used));
  // With no retries left, the error names the key to call again with.
  const noRetry = new SocialDataRouter(key, { baseUrl: env.flaky, retry: { maxRetries: 0 } });
  await assert.rejects(noRetry.extract.pro_net.profileInfo({ url: profileURL }, { idempotencyKey: `${ikey}-b` }), (e) => e instanceof NetworkError && e.idempotencyKey === `${ikey}-b`);
});

test("each documented error as SdrError with its code", e2e, async (t) => {
  const acct = await account(100);
  const c = client(acct.key, { retry: { maxRetries: 0 } });
  const poor = await account(0);
  const limited = await account(100, { period: "day", credits: 0.000001 });
  const revoked = await key(await newAccount(0), "test");
  await call("DELETE", `${env.admin}/sdr/keys/${revoked.id}`);
  const as = (key: string) => client(key, { retry: { maxRetries: 0 } });
  const reused = `sdk-ts-reused-${Date.now()}`;
  const cases: Array<[string, number, string, string, () => Promise<unknown>]> = [
    ["bad url", 400, "invalid_input_format", "validation", () => c.extract.pro_net.profileInfo({ url: "https://example.com/nobody" })],
    ["unknown field", 400, "unknown_field", "validation", () => c.extractRaw("pro_net", "profile.info", { url: profileURL, bogus: 1 })],
    ["wrong input field", 400, "wrong_input_field", "validation", () => c.extractRaw("pro_net", "profile.info", { queries: ["x"] })],
    ["missing input", 400, "missing_input", "validation", () => c.extractRaw("pro_net", "profile.info", {})],
    ["conflicting input", 400, "conflicting_input", "validation", () => c.extract.pro_net.profileInfo({ url: profileURL, urls: [profileURL] })],
    ["invalid field", 400, "invalid_field", "validation", () => c.extractRaw("pro_net", "profile.info", { urls: profileURL })],
    ["limit", 400, "invalid_limit", "validation", () => c.extract.pro_net.profileInfo({ url: profileURL, limit: 5000 })],
    ["option", 400, "invalid_option", "validation", () => c.extractRaw("video_net", "channel.videos", { url: "https://www.youtube.com/@mkbhd", options: { nope: 1 } })],
    ["offer", 400, "unknown_offer", "validation", () => c.extractRaw("pro_net", "profile.info", { url: profileURL, provider: "source_z/nothing" })],
    ["platform", 404, "unknown_platform", "not_found", () => c.extractRaw("nope_net", "profile.info", { url: profileURL })],
    ["service", 404, "unknown_service", "not_found", () => c.extractRaw("pro_net", "profile.infos", { url: profileURL })],
    ["run", 404, "not_found", "not_found", () => c.run("ext_00000000000000000000000000").status()],
    ["search provider", 400, "missing_provider", "validation", () => c.search({ queries: ["coffee"] } as never)],
    ["search cursor", 400, "invalid_cursor", "validation", () => c.search({ provider: "source_a/maps/place.search", queries: ["coffee"], cursor: "not-a-cursor" })],
    ["no key", 401, "missing_api_key", "authentication", () => as("").extract.pro_net.profileInfo({ url: profileURL })],
    ["bad key", 401, "invalid_api_key", "authentication", () => as("sdr_test_nope").extract.pro_net.profileInfo({ url: profileURL })],
    ["revoked key", 401, "revoked_api_key", "authentication", () => as(revoked.key).extract.pro_net.profileInfo({ url: profileURL })],
    ["no credits", 402, "insufficient_credits", "billing", () => as(poor.key).extract.pro_net.profileInfo({ url: profileURL })],
    ["credit limit", 429, "credit_limit_exceeded", "rate_limit", () => as(limited.key).extract.pro_net.profileInfo({ url: profileURL })],
    ["idempotency key", 400, "invalid_idempotency_key", "validation", () => c.extract.pro_net.profileInfo({ url: profileURL }, { idempotencyKey: "k".repeat(300) })],
    ["key reused", 422, "idempotency_key_reused", "validation", async () => {
      await c.extract.pro_net.profileInfo({ url: profileURL }, { idempotencyKey: reused });
      const before = await balance(c);
      await c.extract.pro_net.profileInfo({ url: profileURL, limit: 2 }, { idempotencyKey: reused }).finally(async () => assert.equal(await balance(c), before));
    }],
    ["provider", 502, "provider_error", "provider", () => c.extract.pro_net.profileInfo({ url: magic.providerError })],
    ["upstream rate limit", 429, "upstream_rate_limited", "rate_limit", () => c.extract.pro_net.profileInfo({ url: magic.rateLimited })],
    ["upstream stalled", 504, "request_soft_timeout", "timeout", () => c.extract.pro_net.profileInfo({ url: magic.softTimeout })],
    // sdr-test-slow (5 s) pinned to one offer, under the gateway's 3 s attempt deadline (tests/sdk_test.go).
    ["upstream too slow", 504, "request_timeout", "timeout", () => c.extract.pro_net.profileInfo({ url: magic.slow, provider: "source_b/pro_net" })],
    ["body too large", 413, "request_too_large", "validation", () => c.extractRaw("pro_net", "profile.info", { url: profileURL, pad: "x".repeat(2 << 20) })],
    ["search queries", 400, "missing_queries", "validation", () => c.search({ provider: "source_a/maps/place.search", queries: [] })],
    ["search endpoint", 400, "wrong_endpoint", "validation", () => c.search({ provider: "source_b/pro_net/profile.info", queries: ["x"] })],
    ["search unknown provider", 400, "unknown_provider", "validation", () => c.search({ provider: "source_z/maps/place.search", queries: ["x"] })],
  ];
  for (const [name, status, code, type, fn] of cases) {
    await t.test(name, async () => {
      const before = await balance(c);
      const err = await fn().then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof SdrError, `want SdrError ${code}, got ${String(err)}`);
      assert.equal(err.status, status);
      assert.equal(err.code, code);
      assert.equal(err.type, type);
      assert.ok(err.message);
      if (status === 502 || status === 504) assert.ok(err.runId && err.details?.attempts?.length, `${code} names its run and attempts`);
      if (code === "upstream_rate_limited") assert.ok(err.retryAfter === env.testRetryAfter && err.isRateLimit && !err.isMoney, `upstream_rate_limited: rate, with Retry-After ${env.testRetryAfter}`);
      if (code === "credit_limit_exceeded") assert.ok(err.retryAfter && err.isMoney && !err.isRateLimit, "credit limit: money, with Retry-After");
      if (code !== "idempotency_key_reused") assert.equal(await balance(c), before, "nothing charged");
    });
  }
});

// The endpoint is the test twin's: test runs' events go to test endpoints only.
test("a webhook delivery from the gateway verifies; a tampered one is refused", e2e, async () => {
  const acct = await account(100);
  let resolve!: (d: { headers: Record<string, string>; body: string }) => void;
  const delivered = new Promise<{ headers: Record<string, string>; body: string }>((r) => (resolve = r));
  const srv = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      res.end();
      resolve({ headers: req.headers as Record<string, string>, body });
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hooks`;
    const ep = await call<{ secret: string }>("POST", `${env.admin}/sdr/accounts/${acct.id}/webhooks`, { url, events: ["run.completed"] });
    const c = client(acct.key);
    const h = await c.extract.pro_net.profileInfoAsync({ url: profileURL });
    const d = await delivered;
    const ev = verifyWebhook(ep.secret, d.body, d.headers);
    assert.equal(ev.type, "run.completed");
    assert.ok(ev.id);
    assert.equal((ev.data as { id: string }).id, h.id);
    assert.equal((ev.data as { livemode?: boolean }).livemode, false, "a test run's event");
    const tampered = d.body.replace(`"completed"`, `"cancelled"`);
    assert.notEqual(tampered, d.body);
    assert.throws(() => verifyWebhook(ep.secret, tampered, d.headers), WebhookVerificationError);
  } finally {
    await new Promise((r) => srv.close(r));
  }
});
