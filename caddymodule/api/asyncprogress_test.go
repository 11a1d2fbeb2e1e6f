package api

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
)

// TestRunProgressCancelledFailover: once a run is cancelled in the
// store (by a cancel on another node, which this worker hears of only at
// its next renewal), a failover starts no new offer: Proceed stops it
// (the router asks before holding the offer's money, so nothing is held)
// and the run settles cancelled. The first attempt and the resumed one
// do not ask the store; an attempt that goes on is written as running.
func TestRunProgressCancelledFailover(t *testing.T) {
	a := newTestAPI(t, 10*credits.PerCredit)
	svc, ok := a.Registry.Service("forum_net", "subreddit.posts")
	if !ok || len(svc.LiveOffers()) == 0 {
		t.Fatal("no forum_net/subreddit.posts offer")
	}
	o := svc.LiveOffers()[0]
	for _, tc := range []struct {
		name      string
		attempts  []runs.Attempt // before this attempt
		resuming  bool
		cancelled bool
		wantErr   bool
	}{
		{name: "first attempt", cancelled: true},
		{name: "resumed attempt", attempts: []runs.Attempt{{Offer: o.ID, Outcome: outcomeRunning}}, resuming: true, cancelled: true},
		{name: "failover, run live", attempts: []runs.Attempt{{Offer: "x/y", Outcome: outcomeRunning}}},
		{name: "failover, run cancelled", attempts: []runs.Attempt{{Offer: "x/y", Outcome: outcomeRunning}}, cancelled: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			var written []async.State
			b := &runProgress{run: &runs.Run{ID: "ext_progress", AccountID: "acme"}, runCtx: t.Context(), life: runs.At(runs.Leased),
				progress:  func(_ context.Context, s async.State) error { written = append(written, s); return nil },
				cancelled: func(context.Context) bool { asked++; return tc.cancelled },
				attempts:  slices.Clone(tc.attempts), resuming: tc.resuming}
			if tc.resuming {
				b.resume = resumeRecord{Offer: o.ID, Records: 5}
			}
			err := b.proceed(t.Context(), o)
			if tc.wantErr != errors.Is(err, async.ErrCancelled) || tc.wantErr != b.cancelledInStore() {
				t.Fatalf("proceed = %v (stopped %v); want async.ErrCancelled %v", err, b.cancelledInStore(), tc.wantErr)
			}
			if first := len(tc.attempts) == 0 || tc.resuming; first && asked > 0 {
				t.Errorf("the store was asked %d times for a first or resumed attempt", asked)
			}
			if tc.wantErr {
				return
			}
			if err := b.began(t.Context(), router.Begun{Offer: o, Records: 5}); err != nil {
				t.Fatalf("began: %v", err)
			}
			if len(written) != 1 || written[0].Hold.Records != 5 || !strings.Contains(string(written[0].Resume), `"offer":"`+o.ID+`"`) {
				t.Fatalf("written %+v, want one state holding 5 records of %s with its resume record", written, o.ID)
			}
			want := len(tc.attempts) + 1 // a new attempt; the resumed one begins again
			if tc.resuming {
				want--
			}
			if n := len(b.attempts); n != want || b.attempts[n-1].Offer != o.ID || b.attempts[n-1].Outcome != outcomeRunning {
				t.Errorf("attempts %+v, want %d, %s running last", b.attempts, want, o.ID)
			}
		})
	}
}
