package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
)

// lockNodes opens two stores on one fresh schema, as nodes A and B,
// each beating (its lock taken) with an hour left.
func lockNodes(t *testing.T) (a, b *postgres.Store) {
	t.Helper()
	nodes := pgNodes(t, 2)
	now := time.Now()
	for i, s := range nodes {
		if err := s.HeartbeatNode(t.Context(), fmt.Sprintf("node%c", 'A'+i), now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	return nodes[0], nodes[1]
}

// parkRuns creates ids, claims them for owner and parks them, due in an
// hour.
func parkRuns(t *testing.T, s *postgres.Store, owner string, ids []string) {
	t.Helper()
	now := time.Now()
	for _, id := range ids {
		r := store.AsyncRun{ID: id, AccountID: "acme", Request: []byte(`{}`), Doc: []byte(`{}`),
			CreatedAt: now, Deadline: now.Add(2 * time.Hour)}
		if err := s.CreateAsyncRun(t.Context(), r, 0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ClaimAsyncRuns(t.Context(), owner, len(ids), now, now.Add(time.Hour))
	if err != nil || len(got) != len(ids) {
		t.Fatalf("claim for %s = %d runs, %v", owner, len(got), err)
	}
	for _, r := range got {
		r.Resume, r.DueAt = []byte(`{}`), now.Add(time.Hour)
		if err := s.UpdateAsyncRun(t.Context(), owner, r); err != nil {
			t.Fatal(err)
		}
	}
}

// awaitClaim claims for owner until some run comes, within d.
func awaitClaim(t *testing.T, s *postgres.Store, owner string, d time.Duration) ([]store.AsyncRun, time.Duration) {
	t.Helper()
	t0 := time.Now()
	for {
		now := time.Now()
		got, err := s.ClaimAsyncRuns(t.Context(), owner, 1000, now, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 || time.Since(t0) > d {
			return got, time.Since(t0)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNodeLockTakeover: node A parks runs and dies (its lock's socket
// closed, its heartbeat never ended, an hour left of it); node B's claim
// takes A's parked runs at once, not A's run in a goroutine (its own
// lease holds it), and A's writes of the runs taken fail. A's next beat
// locks again: from then on its runs are its own.
func TestNodeLockTakeover(t *testing.T) {
	a, b := lockNodes(t)
	parkRuns(t, a, "nodeA", []string{"ext_1", "ext_2"})
	now := time.Now()
	run := store.AsyncRun{ID: "ext_run", AccountID: "acme", Request: []byte(`{}`), Doc: []byte(`{}`),
		CreatedAt: now, Deadline: now.Add(2 * time.Hour), Owner: "nodeA", LeaseUntil: now.Add(time.Hour)}
	if err := a.CreateAsyncRun(t.Context(), run, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := awaitClaim(t, b, "nodeB", 300*time.Millisecond); len(got) != 0 {
		t.Fatalf("B claimed %v while A lives", idsOf(got))
	}

	postgres.KillNodeLock(a, "nodeA")
	got, took := awaitClaim(t, b, "nodeB", 10*time.Second)
	if ids := idsOf(got); !slices.Equal(ids, []string{"ext_1", "ext_2"}) {
		t.Fatalf("B's claim after A's lock died = %v; want A's parked runs", ids)
	}
	t.Logf("A's parked runs taken over %s after its lock's socket closed (its heartbeat had an hour left)", took.Round(time.Millisecond))
	for _, r := range got {
		if r.Owner != "nodeB" || r.DueAt.IsZero() {
			t.Errorf("%s taken over: owner %s, due %v; want B's, still parked", r.ID, r.Owner, r.DueAt)
		}
	}
	if err := a.UnparkAsyncRun(t.Context(), "nodeA", "ext_1", time.Now().Add(time.Hour)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("A unparks a run B took: %v, want ErrLeaseLost", err)
	}
	if due, err := a.DueAsyncRuns(t.Context(), "nodeA", time.Now().Add(2*time.Hour), 10); err != nil || len(due) != 0 {
		t.Errorf("A's sweep after the takeover = %v, %v; want nothing", idsOf(due), err)
	}

	// A lives on: its next beat locks again, and its runs are its own.
	if err := a.HeartbeatNode(t.Context(), "nodeA", time.Now(), time.Now().Add(time.Hour)); err == nil {
		t.Errorf("A's beat after its lock's session ended: no error; want one saying its runs may be taken")
	}
	parkRuns(t, a, "nodeA", []string{"ext_3"})
	if got, _ := awaitClaim(t, b, "nodeB", 300*time.Millisecond); len(got) != 0 {
		t.Errorf("B claimed %v once A locked again", idsOf(got))
	}

	// A stops as a worker does: its last beat ends the lock, and B takes
	// every run A left, the one a goroutine ran too.
	if err := a.HeartbeatNode(t.Context(), "nodeA", time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	got, _ = awaitClaim(t, b, "nodeB", time.Second)
	if ids := idsOf(got); !slices.Equal(ids, []string{"ext_3", "ext_run"}) {
		t.Errorf("B's claim after A's last beat = %v", ids)
	}
}

// TestNodeLockClose: a store closed without a last beat (Cleanup after a
// failed stop) ends its node's lock with it, so the node's parked runs go
// to the next claim at once.
func TestNodeLockClose(t *testing.T) {
	a, b := lockNodes(t)
	parkRuns(t, a, "nodeA", []string{"ext_1"})
	a.Close()
	if got, took := awaitClaim(t, b, "nodeB", 5*time.Second); len(got) != 1 {
		t.Errorf("B's claim after A closed = %v, after %s", idsOf(got), took)
	}
	if err := a.HeartbeatNode(context.Background(), "nodeA", time.Now(), time.Now().Add(time.Hour)); err == nil {
		t.Errorf("a beat on a closed store: no error")
	}
}

// TestNodeLockRace: while A's lock is dead, A unparks its runs as B
// claims them; each run is either A's, unparked, or B's, parked, never
// both: the row lock decides.
func TestNodeLockRace(t *testing.T) {
	a, b := lockNodes(t)
	var ids []string
	for i := range 300 {
		ids = append(ids, fmt.Sprintf("ext_%03d", i))
	}
	parkRuns(t, a, "nodeA", ids)
	postgres.KillNodeLock(a, "nodeA")
	var (
		wg       sync.WaitGroup
		unparked []string
		claimed  []store.AsyncRun
	)
	unparking := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(unparking)
		for _, id := range slices.Backward(ids) {
			if err := a.UnparkAsyncRun(context.Background(), "nodeA", id, time.Now().Add(time.Hour)); err == nil {
				unparked = append(unparked, id)
			} else if !errors.Is(err, store.ErrLeaseLost) {
				t.Error(err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			now := time.Now()
			got, err := b.ClaimAsyncRuns(context.Background(), "nodeB", 20, now, now.Add(time.Hour))
			if err != nil {
				t.Error(err)
				return
			}
			claimed = append(claimed, got...)
			select {
			case <-unparking:
				if len(got) == 0 {
					return
				}
			default:
			}
		}
	}()
	wg.Wait()
	mine := map[string]bool{}
	for _, id := range unparked {
		mine[id] = true
	}
	for _, r := range claimed {
		if mine[r.ID] || r.DueAt.IsZero() {
			t.Errorf("%s: unparked by A and claimed by B (parked %v)", r.ID, !r.DueAt.IsZero())
		}
		mine[r.ID] = true
	}
	if len(mine) != len(ids) {
		t.Errorf("%d runs unparked by A or claimed by B, want %d", len(mine), len(ids))
	}
	t.Logf("A unparked %d, B took %d parked", len(unparked), len(claimed))
}

// idsOf is the ids of rs, sorted.
func idsOf(rs []store.AsyncRun) []string {
	ids := []string{}
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}
