package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

func init() {
	asyncSuites = append(asyncSuites,
		suite{"async_park_sweep", testAsyncParkSweep},
		suite{"async_park_takeover", testAsyncParkTakeover},
		suite{"async_park_cancel", testAsyncParkCancel},
	)
}

func dueIDs(t *testing.T, s store.Store, owner string, now time.Time) []string {
	t.Helper()
	got, err := s.DueAsyncRuns(ctx(t), owner, now, 100)
	if err != nil {
		t.Fatalf("DueAsyncRuns(%s): %v", owner, err)
	}
	return idsOf(got)
}

// park parks owner's run r, due at due, with a resume record.
func park(t *testing.T, s store.Store, owner string, r store.AsyncRun, due time.Time) {
	t.Helper()
	r.Resume = []byte(`{"offer":"src/a","started":[{"offer":"src/a","batch":0,"handle":"run:r1/dataset:d1"}]}`)
	r.DueAt = due
	if err := s.UpdateAsyncRun(ctx(t), owner, r); err != nil {
		t.Fatalf("UpdateAsyncRun parking %s: %v", r.ID, err)
	}
}

// A parked run is its owner's poller's: due by time, delayed, woken; a
// run a goroutine runs is none of the sweep's.
func testAsyncParkSweep(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	for _, id := range []string{"ext_p1", "ext_p2"} {
		if err := s.CreateAsyncRun(ctx(t), asyncRun(id, "acme", base), 0); err != nil {
			t.Fatalf("CreateAsyncRun: %v", err)
		}
	}
	if err := s.HeartbeatNode(ctx(t), "node1", base, base.Add(30*time.Second)); err != nil {
		t.Fatalf("HeartbeatNode: %v", err)
	}
	claimed, err := s.ClaimAsyncRuns(ctx(t), "node1", 10, base, base.Add(time.Minute))
	if err != nil || len(claimed) != 2 {
		t.Fatalf("ClaimAsyncRuns = %d runs, %v", len(claimed), err)
	}
	byID(claimed)
	if !claimed[0].DueAt.IsZero() {
		t.Errorf("a new run claimed is parked: due %v", claimed[0].DueAt)
	}
	park(t, s, "node1", claimed[0], base.Add(10*time.Second))
	got, err := s.GetAsyncRun(ctx(t), "acme", "ext_p1")
	if err != nil {
		t.Fatalf("GetAsyncRun: %v", err)
	}
	checkTime(t, "due_at", got.DueAt, base.Add(10*time.Second))
	checkTime(t, "lease_until of a parked run", got.LeaseUntil, store.NodeLease)
	if len(got.Resume) == 0 {
		t.Errorf("parking lost the resume record")
	}
	if ids := dueIDs(t, s, "node1", base.Add(5*time.Second)); len(ids) != 0 {
		t.Errorf("due before its time: %v", ids)
	}
	if ids := dueIDs(t, s, "node1", base.Add(10*time.Second)); !slices.Equal(ids, []string{"ext_p1"}) {
		t.Errorf("due at its time = %v, want [ext_p1] (ext_p2 is not parked)", ids)
	}
	if ids := dueIDs(t, s, "node2", base.Add(time.Hour)); len(ids) != 0 {
		t.Errorf("another node's sweep finds %v", ids)
	}

	if err := s.DelayAsyncRuns(ctx(t), "node1", []string{"ext_p1", "ext_p2"}, []time.Time{base.Add(20 * time.Second), base.Add(20 * time.Second)}); err != nil {
		t.Fatalf("DelayAsyncRuns: %v", err)
	}
	if ids := dueIDs(t, s, "node1", base.Add(15*time.Second)); len(ids) != 0 {
		t.Errorf("due after a delay: %v", ids)
	}
	if got, _ := s.GetAsyncRun(ctx(t), "acme", "ext_p2"); !got.DueAt.IsZero() {
		t.Errorf("a delay parked a run a goroutine runs: due %v", got.DueAt)
	}
	if err := s.DelayAsyncRuns(ctx(t), "node2", []string{"ext_p1"}, []time.Time{base}); err != nil {
		t.Fatalf("DelayAsyncRuns by another node: %v", err)
	}
	if ids := dueIDs(t, s, "node1", base.Add(15*time.Second)); len(ids) != 0 {
		t.Errorf("another node's delay moved the run: due %v", ids)
	}

	// A callback wakes it: due at once, whatever node asks.
	owner, parked, err := s.WakeAsyncRun(ctx(t), "ext_p1", base.Add(12*time.Second))
	if err != nil || owner != "node1" || !parked {
		t.Errorf("WakeAsyncRun = %q, %v, %v; want node1, parked", owner, parked, err)
	}
	if ids := dueIDs(t, s, "node1", base.Add(12*time.Second)); !slices.Equal(ids, []string{"ext_p1"}) {
		t.Errorf("woken run not due: %v", ids)
	}
	if _, parked, err := s.WakeAsyncRun(ctx(t), "ext_p2", base); err != nil || parked {
		t.Errorf("WakeAsyncRun of a running run = parked %v, %v", parked, err)
	}
	if _, _, err := s.WakeAsyncRun(ctx(t), "ext_none", base); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("WakeAsyncRun of an unknown run: %v, want ErrNotFound", err)
	}

	// Unparked, a goroutine runs it again under a lease of its own.
	if err := s.UnparkAsyncRun(ctx(t), "node2", "ext_p1", base.Add(time.Minute)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("UnparkAsyncRun by another node: %v, want ErrLeaseLost", err)
	}
	if err := s.UnparkAsyncRun(ctx(t), "node1", "ext_p1", base.Add(time.Minute)); err != nil {
		t.Fatalf("UnparkAsyncRun: %v", err)
	}
	got, _ = s.GetAsyncRun(ctx(t), "acme", "ext_p1")
	if !got.DueAt.IsZero() {
		t.Errorf("unparked run still due at %v", got.DueAt)
	}
	checkTime(t, "lease_until unparked", got.LeaseUntil, base.Add(time.Minute))
	if ids := dueIDs(t, s, "node1", base.Add(time.Hour)); len(ids) != 0 {
		t.Errorf("unparked run still swept: %v", ids)
	}
}

// A node's parked runs are held by its heartbeat, not by leases: they
// stay while it beats, whatever their lease says, and another node takes
// them over, still parked, once the beat lapses. A run a goroutine runs
// keeps its own lease, and a run stored before nodes (owner and lease,
// no node record) is claimed once its lease lapses, as before.
func testAsyncParkTakeover(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	for _, id := range []string{"ext_t1", "ext_t2", "ext_t3"} {
		if err := s.CreateAsyncRun(ctx(t), asyncRun(id, "acme", base), 0); err != nil {
			t.Fatalf("CreateAsyncRun: %v", err)
		}
	}
	// ext_t4: a run as stored before nodes, leased by a worker alone.
	old := asyncRun("ext_t4", "acme", base)
	old.Owner, old.LeaseUntil = "node1", base.Add(45*time.Second)
	if err := s.CreateAsyncRun(ctx(t), old, 0); err != nil {
		t.Fatalf("CreateAsyncRun of an old-format run: %v", err)
	}
	_ = s.HeartbeatNode(ctx(t), "node1", base, base.Add(30*time.Second))
	claimed, err := s.ClaimAsyncRuns(ctx(t), "node1", 3, base, base.Add(50*time.Second))
	if err != nil || len(claimed) != 3 {
		t.Fatalf("ClaimAsyncRuns = %d, %v", len(claimed), err)
	}
	byID(claimed)
	park(t, s, "node1", claimed[0], base.Add(time.Hour))
	park(t, s, "node1", claimed[1], base.Add(time.Hour))

	// node1 beats on past every lease: nothing to take.
	_ = s.HeartbeatNode(ctx(t), "node2", base.Add(20*time.Second), base.Add(200*time.Second))
	_ = s.HeartbeatNode(ctx(t), "node1", base.Add(20*time.Second), base.Add(60*time.Second))
	if got, err := s.ClaimAsyncRuns(ctx(t), "node2", 10, base.Add(40*time.Second), base.Add(100*time.Second)); err != nil || len(got) != 0 {
		t.Errorf("claim while node1 beats = %d runs, %v; want none", len(got), err)
	}
	// ext_t3 runs in a goroutine of node1 whose lease lapsed at 50 s,
	// ext_t4's at 45 s: taken; the parked ones stay node1's.
	got, err := s.ClaimAsyncRuns(ctx(t), "node2", 10, base.Add(55*time.Second), base.Add(300*time.Second))
	if ids := idsOf(got); err != nil || !slices.Equal(ids, []string{"ext_t3", "ext_t4"}) {
		t.Errorf("claim after the goroutine leases lapsed = %v, %v; want [ext_t3 ext_t4]", ids, err)
	}
	// node1 stops beating: its parked runs are node2's, still parked.
	got, err = s.ClaimAsyncRuns(ctx(t), "node2", 10, base.Add(61*time.Second), base.Add(100*time.Second))
	if ids := idsOf(got); err != nil || !slices.Equal(ids, []string{"ext_t1", "ext_t2"}) {
		t.Fatalf("claim after node1's beat lapsed = %v, %v; want [ext_t1 ext_t2]", ids, err)
	}
	for _, r := range got {
		if r.Owner != "node2" || r.DueAt.IsZero() || len(r.Resume) == 0 {
			t.Errorf("taken over: %s owner %q due %v resume %q; want node2's, parked, with its record", r.ID, r.Owner, r.DueAt, r.Resume)
		}
		checkTime(t, "lease of a parked run taken over", r.LeaseUntil, store.NodeLease)
	}
	if err := s.UpdateAsyncRun(ctx(t), "node1", got[0]); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("UpdateAsyncRun by the dead node: %v, want ErrLeaseLost", err)
	}
	if ids := dueIDs(t, s, "node2", base.Add(2*time.Hour)); !slices.Equal(ids, []string{"ext_t1", "ext_t2"}) {
		t.Errorf("node2's sweep = %v", ids)
	}
	if got, _ := s.ClaimAsyncRuns(ctx(t), "node3", 10, base.Add(150*time.Second), base.Add(200*time.Second)); len(got) != 0 {
		t.Errorf("claim while node2 beats = %v", idsOf(got))
	}
}

// byID sorts runs by id: claims order by creation, and these were
// created at one time.
func byID(rs []store.AsyncRun) {
	slices.SortFunc(rs, func(a, b store.AsyncRun) int { return strings.Compare(a.ID, b.ID) })
}

// idsOf is the ids of rs, sorted.
func idsOf(rs []store.AsyncRun) []string {
	byID(rs)
	ids := []string{}
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

// A cancel makes a parked run due at once, for its owner's sweep.
func testAsyncParkCancel(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	if err := s.CreateAsyncRun(ctx(t), asyncRun("ext_k1", "acme", base), 0); err != nil {
		t.Fatalf("CreateAsyncRun: %v", err)
	}
	_ = s.HeartbeatNode(ctx(t), "node1", base, base.Add(time.Hour))
	claimed, err := s.ClaimAsyncRuns(ctx(t), "node1", 1, base, base.Add(time.Minute))
	if err != nil || len(claimed) != 1 {
		t.Fatalf("ClaimAsyncRuns = %d, %v", len(claimed), err)
	}
	park(t, s, "node1", claimed[0], base.Add(30*time.Minute))
	if _, err := s.CancelAsyncRun(ctx(t), "acme", "ext_k1"); err != nil {
		t.Fatalf("CancelAsyncRun: %v", err)
	}
	got, err := s.DueAsyncRuns(ctx(t), "node1", base.Add(time.Second), 10)
	if err != nil || len(got) != 1 || !got[0].Cancelled {
		t.Errorf("sweep after a cancel = %+v, %v; want the run, cancelled", got, err)
	}
}
