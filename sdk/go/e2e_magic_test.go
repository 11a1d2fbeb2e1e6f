package sdr_test

import (
	"testing"

	sdr "socialrouter/sdk/go"
)

// TestMagicOutcomes: the magic inputs that end in a completed run come
// back as such through the typed call: sdr-test-failover served by the
// second offer after the first failed, sdr-test-empty with no records and
// nothing charged. (The failing ones are in TestErrorsTyped.)
func TestMagicOutcomes(t *testing.T) {
	e := gateway(t)
	ctx := ctxT(t)
	_, key := e.account(t, 100, nil)
	c := sdr.NewClient(key, sdr.WithBaseURL(e.base), sdr.WithMaxRetries(0))

	t.Run("failover", func(t *testing.T) {
		before := balance(t, c)
		run, err := c.Extract.ProNet.ProfileInfo(ctx, sdr.ProNetProfileInfoRequest{URL: magicFailover})
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != "completed" || len(run.Data) == 0 || len(run.Attempts) != 2 || run.ServedBy == nil {
			t.Fatalf("status %s, %d records, %d attempts, served_by %v", run.Status, len(run.Data), len(run.Attempts), run.ServedBy)
		}
		first, second := run.Attempts[0], run.Attempts[1]
		if first.Outcome != "upstream_5xx" || second.Outcome != "ok" || *run.ServedBy != second.Offer || first.Offer == second.Offer {
			t.Errorf("attempts %+v, served_by %s: want the first offer failing and the second serving", run.Attempts, *run.ServedBy)
		}
		if after := balance(t, c); run.CreditsUsed <= 0 || !near(before-after, run.CreditsUsed) {
			t.Errorf("test balance %v → %v, the run charged %v", before, after, run.CreditsUsed)
		}
	})

	t.Run("empty", func(t *testing.T) {
		before := balance(t, c)
		run, err := c.Extract.ProNet.ProfileInfo(ctx, sdr.ProNetProfileInfoRequest{URL: magicEmpty})
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != "completed" || len(run.Data) != 0 || run.CreditsUsed != 0 {
			t.Fatalf("status %s, %d records, credits_used %v", run.Status, len(run.Data), run.CreditsUsed)
		}
		if after := balance(t, c); after != before {
			t.Errorf("test balance %v → %v for no records", before, after)
		}
	})
}
