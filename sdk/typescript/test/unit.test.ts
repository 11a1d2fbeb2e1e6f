import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { SdrError, SocialDataRouter, verifyWebhook, WebhookVerificationError } from "../src/index.js";

type Answer = { status: number; headers?: Record<string, string>; body: string };

/** A local server answering each request with the next answer (the last one repeated). */
async function serve(answers: Answer[], handle?: (req: IncomingMessage, res: ServerResponse, n: number) => boolean) {
  const keys: string[] = [];
  const srv = createServer((req, res) => {
    const n = keys.length;
    keys.push(String(req.headers["idempotency-key"] ?? ""));
    if (handle?.(req, res, n)) return;
    const a = answers[Math.min(n, answers.length - 1)]!;
    res.writeHead(a.status, { "Content-Type": "application/json", ...a.headers });
    res.end(a.body);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return { url, keys, close: () => new Promise((r) => srv.close(r)) };
}

const ok: Answer = { status: 200, body: `{"id":"ext_1","status":"completed","data":[]}` };
const err = (status: number, code: string, headers: Record<string, string> = {}): Answer => ({
  status,
  headers,
  body: JSON.stringify({ error: { code, type: "t", message: "m" } }),
});

const cases: Array<{ name: string; answers: Answer[]; calls: number; status?: number; code?: string }> = [
  { name: "rate limit waits Retry-After", answers: [err(429, "too_many_concurrent_runs", { "Retry-After": "1" }), ok], calls: 2 },
  { name: "credit limit is money, not retried", answers: [err(429, "credit_limit_exceeded", { "Retry-After": "1" })], calls: 1, status: 429, code: "credit_limit_exceeded" },
  { name: "Retry-After too long", answers: [err(429, "upstream_rate_limited", { "Retry-After": "3600" })], calls: 1, status: 429, code: "upstream_rate_limited" },
  { name: "key in use", answers: [err(409, "idempotency_key_in_use", { "Retry-After": "1" }), ok], calls: 2 },
  { name: "proxy 502", answers: [{ status: 502, body: "bad gateway" }, ok], calls: 2 },
  { name: "gateway 502 names its run", answers: [{ status: 502, headers: { "X-Run-Id": "ext_9" }, body: JSON.stringify({ error: { code: "provider_error", type: "provider", message: "m", run_id: "ext_9" } }) }], calls: 1, status: 502, code: "provider_error" },
  { name: "store unavailable", answers: [err(503, "store_unavailable", { "Retry-After": "1" }), ok], calls: 2 },
  { name: "validation", answers: [err(400, "invalid_limit")], calls: 1, status: 400, code: "invalid_limit" },
  { name: "gives up after its retries", answers: [{ status: 504, body: "" }], calls: 3, status: 504, code: "" },
];

for (const tc of cases) {
  test(`retries: ${tc.name}`, async () => {
    const s = await serve(tc.answers);
    try {
      const c = new SocialDataRouter("k", { baseUrl: s.url, retry: { maxRetries: 2, backoffMs: 10 } });
      const got = await c.extractRaw("p", "s", { url: "u" }).then(() => undefined, (e: unknown) => e);
      assert.equal(s.keys.length, tc.calls);
      assert.ok(s.keys[0], "an Idempotency-Key on the POST");
      assert.deepEqual(new Set(s.keys), new Set([s.keys[0]]), "the same key on every attempt");
      if (tc.status === undefined) {
        assert.equal(got, undefined);
        return;
      }
      assert.ok(got instanceof SdrError, `want SdrError, got ${String(got)}`);
      assert.equal(got.status, tc.status);
      assert.equal(got.code, tc.code);
      assert.equal(got.idempotencyKey, s.keys[0]);
    } finally {
      await s.close();
    }
  });
}

test("retries: a dropped connection is sent again with its key", async () => {
  const s = await serve([ok], (req, res, n) => {
    if (n === 0) {
      req.socket.destroy();
      return true;
    }
    return false;
  });
  try {
    const c = new SocialDataRouter("k", { baseUrl: s.url, retry: { backoffMs: 10 } });
    await c.extractRaw("p", "s", { url: "u" });
    assert.ok(s.keys.length >= 2 && s.keys[0] && s.keys.every((k) => k === s.keys[0]), `keys ${s.keys}`);
  } finally {
    await s.close();
  }
});

test("webhooks: Standard Webhooks rules on a delivery signed here", () => {
  const secret = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64");
  const body = `{"type":"run.completed","timestamp":"2026-01-01T00:00:00Z","data":{"id":"ext_1"}}`;
  const now = new Date();
  const sig = new Webhook(secret).sign("msg_1", now, body);
  const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(Math.floor(now.getTime() / 1000)), "webhook-signature": sig };
  const ev = verifyWebhook(secret, body, headers);
  assert.equal(ev.type, "run.completed");
  assert.equal(ev.id, "msg_1");
  assert.throws(() => verifyWebhook(secret, body.replace("ext_1", "ext_2"), headers), WebhookVerificationError);
  assert.throws(() => verifyWebhook(secret, body, { ...headers, "webhook-id": "msg_2" }), WebhookVerificationError);
  const old = new Date(now.getTime() - 600_000);
  const oldHeaders = { "webhook-id": "msg_1", "webhook-timestamp": String(Math.floor(old.getTime() / 1000)), "webhook-signature": new Webhook(secret).sign("msg_1", old, body) };
  assert.throws(() => verifyWebhook(secret, body, oldHeaders), WebhookVerificationError);
});
