package sdr_test

import (
	"testing"

	sdr "socialrouter/sdk/go"
)

// TestLiveKey is the suite's live-key part, run by tests/sdk_test.go after
// the test-key part and its check that the simulator saw no call. It holds
// only what test mode cannot show by design: a call that reaches an
// upstream (the simulator) and is charged to the live balance, with
// "livemode": true in the typed run, and the test balance left alone.
// Every other case (errors, failover, timeouts, async, cancel, retries,
// webhooks) runs on a test key with the magic inputs.
func TestLiveKey(t *testing.T) {
	e := gateway(t)
	ctx := ctxT(t)
	id := e.newAccount(t, 10)
	_, liveKey := e.key(t, id, "live", nil)
	_, testKey := e.key(t, id, "test", nil)
	live := sdr.NewClient(liveKey, sdr.WithBaseURL(e.base))
	test := sdr.NewClient(testKey, sdr.WithBaseURL(e.base))
	liveBefore, testBefore := balance(t, live), balance(t, test)
	run, err := live.Extract.ProNet.ProfileInfo(ctx, sdr.ProNetProfileInfoRequest{URL: profileURL})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "completed" || len(run.Data) == 0 || run.Livemode == nil || !*run.Livemode {
		t.Fatalf("live run: status %s, %d records, livemode %v", run.Status, len(run.Data), run.Livemode)
	}
	if after := balance(t, live); run.CreditsUsed <= 0 || !near(liveBefore-after, run.CreditsUsed) {
		t.Errorf("live balance %v → %v, the run charged %v", liveBefore, after, run.CreditsUsed)
	}
	if after := balance(t, test); after != testBefore {
		t.Errorf("test balance %v → %v after a live call", testBefore, after)
	}
}
