// The suite's live-key part, run by tests/sdk_test.go after the test-key
// files and its check that the simulator saw no call. It holds only what
// test mode cannot show by design: a call that reaches an upstream (the
// simulator) and is charged to the live balance, with "livemode": true in
// the typed run, and the test balance left alone. Every other case
// (errors, failover, timeouts, async, cancel, retries, webhooks) runs on a
// test key with the magic inputs (e2e.test.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { balance, client, e2e, key, near, newAccount, profileURL } from "./env.js";

test("a live key's call reaches an upstream and is charged to the live balance", e2e, async () => {
  const id = await newAccount(10);
  const live = client((await key(id, "live")).key);
  const test = client((await key(id, "test")).key);
  const [liveBefore, testBefore] = [await balance(live), await balance(test)];
  const run = await live.extract.pro_net.profileInfo({ url: profileURL });
  assert.equal(run.status, "completed");
  assert.ok(run.data.length > 0);
  assert.equal(run.livemode, true);
  assert.ok(run.credits_used > 0 && near(liveBefore - (await balance(live)), run.credits_used), "charged to the live balance");
  assert.equal(await balance(test), testBefore, "the test balance is untouched");
});
