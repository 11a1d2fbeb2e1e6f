package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

func init() {
	asyncSuites = append(asyncSuites, suite{"async_takeover_batches", testAsyncTakeoverBatches})
}

// testAsyncTakeoverBatches: a node whose heartbeat lapsed leaves parked
// runs and runs in goroutines, and runs wait unleased besides; another
// node takes them all in batches smaller than their number, each once,
// oldest first across the batches (a store may read each kind of
// claimable run by its own index: the order must hold across them), and
// then none is left.
func testAsyncTakeoverBatches(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	_ = s.HeartbeatNode(ctx(t), "node1", base, base.Add(30*time.Second))
	var want []string
	for i := range 27 {
		id := fmt.Sprintf("ext_b%02d", i)
		want = append(want, id)
		r := asyncRun(id, "acme", base.Add(time.Duration(i)*time.Second))
		if i%9 != 4 { // ext_b04, b13, b22 wait unleased
			r.Owner, r.LeaseUntil = "node1", base.Add(time.Hour)
		}
		if err := s.CreateAsyncRun(ctx(t), r, 0); err != nil {
			t.Fatal(err)
		}
		if i%3 != 2 && i%9 != 4 { // the others run in node1's goroutines
			park(t, s, "node1", r, base.Add(time.Hour))
		}
	}
	at := base.Add(61 * time.Second) // node1's beat lapsed at 30 s
	_ = s.HeartbeatNode(ctx(t), "node2", at, at.Add(time.Minute))
	var got []string
	for range 10 {
		batch, err := s.ClaimAsyncRuns(ctx(t), "node2", 7, at, at.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		if len(batch) > 7 {
			t.Fatalf("a claim of 7 took %d runs", len(batch))
		}
		slices.SortFunc(batch, func(a, b store.AsyncRun) int { return a.CreatedAt.Compare(b.CreatedAt) })
		for _, r := range batch {
			if r.Owner != "node2" {
				t.Errorf("%s claimed with owner %q", r.ID, r.Owner)
			}
			got = append(got, r.ID)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("runs taken over, batch after batch:\n%v\nwant every one once, oldest first:\n%v", got, want)
	}
}
