package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// asyncSuites are the cases of store.Async.
var asyncSuites = []suite{
	{"async_runs", testAsyncRuns},
	{"async_claim_lease", testAsyncClaimLease},
	{"async_claim_concurrent", testAsyncClaimConcurrent},
	{"async_cancel", testAsyncCancel},
	{"async_cap_concurrent", testAsyncCapConcurrent},
	{"async_cap_grouped", testAsyncCapGrouped},
	{"async_update_grouped", testAsyncUpdateGrouped},
	{"idempotency_keys", testIdempotencyKeys},
	{"idempotency_concurrent", testIdempotencyConcurrent},
}

func asyncRun(id, account string, at time.Time) store.AsyncRun {
	return store.AsyncRun{ID: id, AccountID: account, KeyID: "key_1", Request: []byte(`{"kind":"extract"}`),
		Doc: []byte(`{"id":"` + id + `","status":"running"}`), HoldPrice: 1500, HoldRecords: 40,
		CreatedAt: at, Deadline: at.Add(time.Hour)}
}

func testAsyncRuns(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	r := asyncRun("ext_a1", "acme", base)
	if err := s.CreateAsyncRun(ctx(t), r, 0); err != nil {
		t.Fatalf("CreateAsyncRun: %v", err)
	}
	if err := s.CreateAsyncRun(ctx(t), r, 0); !errors.Is(err, store.ErrExists) {
		t.Errorf("second CreateAsyncRun: %v, want ErrExists", err)
	}
	got, err := s.GetAsyncRun(ctx(t), "acme", "ext_a1")
	if err != nil {
		t.Fatalf("GetAsyncRun: %v", err)
	}
	if got.ID != r.ID || got.KeyID != "key_1" || string(got.Request) != string(r.Request) || string(got.Doc) != string(r.Doc) ||
		got.HoldPrice != 1500 || got.HoldRecords != 40 || got.Owner != "" || got.Cancelled {
		t.Errorf("GetAsyncRun = %+v", got)
	}
	checkTime(t, "created_at", got.CreatedAt, base)
	checkTime(t, "deadline", got.Deadline, base.Add(time.Hour))
	if _, err := s.GetAsyncRun(ctx(t), "other", "ext_a1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetAsyncRun of another account: %v, want ErrNotFound", err)
	}

	// Only the owner writes progress.
	claimed, err := s.ClaimAsyncRuns(ctx(t), "node1", 10, base, base.Add(time.Minute))
	if err != nil || len(claimed) != 1 || claimed[0].Owner != "node1" {
		t.Fatalf("ClaimAsyncRuns = %+v, %v", claimed, err)
	}
	up := claimed[0]
	up.Doc, up.HoldPrice, up.HoldRecords = []byte(`{"id":"ext_a1","status":"running","attempts":[]}`), 2000, 10
	up.Resume = []byte(`{"offer":"src/a","batches":[{"handle":"run:r1/dataset:d1"}]}`)
	if err := s.UpdateAsyncRun(ctx(t), "node2", up); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("UpdateAsyncRun by another worker: %v, want ErrLeaseLost", err)
	}
	if err := s.UpdateAsyncRun(ctx(t), "node1", up); err != nil {
		t.Fatalf("UpdateAsyncRun: %v", err)
	}
	got, _ = s.GetAsyncRun(ctx(t), "acme", "ext_a1")
	if string(got.Doc) != string(up.Doc) || got.HoldPrice != 2000 || got.HoldRecords != 10 || string(got.Resume) != string(up.Resume) {
		t.Errorf("after UpdateAsyncRun: %+v", got)
	}
	// The worker that takes the run over gets the upstream work to resume.
	again, err := s.ClaimAsyncRuns(ctx(t), "node2", 10, base.Add(2*time.Minute), base.Add(3*time.Minute))
	if err != nil || len(again) != 1 || string(again[0].Resume) != string(up.Resume) {
		t.Fatalf("ClaimAsyncRuns after the lease lapsed = %+v, %v; want the resume record", again, err)
	}

	if err := s.DeleteAsyncRun(ctx(t), "ext_a1"); err != nil {
		t.Fatalf("DeleteAsyncRun: %v", err)
	}
	if err := s.DeleteAsyncRun(ctx(t), "ext_a1"); err != nil {
		t.Errorf("second DeleteAsyncRun: %v", err)
	}
	if _, err := s.GetAsyncRun(ctx(t), "acme", "ext_a1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetAsyncRun after delete: %v, want ErrNotFound", err)
	}
	if err := s.UpdateAsyncRun(ctx(t), "node1", up); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("UpdateAsyncRun after delete: %v, want ErrLeaseLost", err)
	}
}

// testAsyncClaimLease: a claim takes runs no live lease holds, oldest
// first, at most n; a lapsed lease is taken over; renewal keeps it.
func testAsyncClaimLease(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	for i := range 3 {
		if err := s.CreateAsyncRun(ctx(t), asyncRun(fmt.Sprintf("ext_c%d", i), "acme", base.Add(time.Duration(i)*time.Second)), 0); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(rs []store.AsyncRun) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	a, err := s.ClaimAsyncRuns(ctx(t), "node1", 2, base, base.Add(30*time.Second))
	if err != nil || !slices.Equal(ids(a), []string{"ext_c0", "ext_c1"}) {
		t.Fatalf("first claim = %v, %v; want the two oldest", ids(a), err)
	}
	b, err := s.ClaimAsyncRuns(ctx(t), "node2", 10, base.Add(10*time.Second), base.Add(40*time.Second))
	if err != nil || !slices.Equal(ids(b), []string{"ext_c2"}) {
		t.Fatalf("second claim = %v, %v; want the one left", ids(b), err)
	}
	held, cancelled, err := s.RenewAsyncRuns(ctx(t), "node1", []string{"ext_c0", "ext_c2"}, base.Add(60*time.Second))
	if err != nil || !slices.Equal(held, []string{"ext_c0"}) || len(cancelled) != 0 {
		t.Fatalf("renew = %v %v %v; want ext_c0 alone held", held, cancelled, err)
	}
	// At 45 s node1's renewed c0 is live, its c1 and node2's c2 lapsed.
	c, err := s.ClaimAsyncRuns(ctx(t), "node3", 10, base.Add(45*time.Second), base.Add(75*time.Second))
	if err != nil || !slices.Equal(ids(c), []string{"ext_c1", "ext_c2"}) {
		t.Fatalf("claim after lapse = %v, %v; want ext_c1 and ext_c2", ids(c), err)
	}
	for _, r := range c {
		if r.Owner != "node3" {
			t.Errorf("claimed %s owner %q", r.ID, r.Owner)
		}
	}
	held, _, _ = s.RenewAsyncRuns(ctx(t), "node2", []string{"ext_c2"}, base.Add(90*time.Second))
	if len(held) != 0 {
		t.Errorf("node2 still holds %v after node3 took it over", held)
	}
	got, _ := s.GetAsyncRun(ctx(t), "acme", "ext_c2")
	if got.Owner != "node3" {
		t.Errorf("owner of ext_c2 = %q, want node3", got.Owner)
	}
}

// testAsyncClaimConcurrent: claims racing over the same runs never share one.
func testAsyncClaimConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	const runs = 40
	for i := range runs {
		if err := s.CreateAsyncRun(ctx(t), asyncRun(fmt.Sprintf("ext_k%02d", i), "acme", base), 0); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("node%d", w)
			for range 10 {
				got, err := s.ClaimAsyncRuns(ctx(t), owner, 3, base, base.Add(time.Minute))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, r := range got {
					if prev, dup := seen[r.ID]; dup {
						t.Errorf("%s claimed by %s and %s", r.ID, prev, owner)
					}
					seen[r.ID] = owner
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != runs {
		t.Errorf("%d runs claimed, want %d", len(seen), runs)
	}
}

func testAsyncCancel(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	if err := s.CreateAsyncRun(ctx(t), asyncRun("ext_x1", "acme", base), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimAsyncRuns(ctx(t), "node1", 1, base, base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelAsyncRun(ctx(t), "other", "ext_x1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CancelAsyncRun of another account: %v, want ErrNotFound", err)
	}
	got, err := s.CancelAsyncRun(ctx(t), "acme", "ext_x1")
	if err != nil || !got.Cancelled || got.ID != "ext_x1" {
		t.Fatalf("CancelAsyncRun = %+v, %v", got, err)
	}
	held, cancelled, err := s.RenewAsyncRuns(ctx(t), "node1", []string{"ext_x1"}, base.Add(2*time.Minute))
	if err != nil || !slices.Equal(held, []string{"ext_x1"}) || !slices.Equal(cancelled, []string{"ext_x1"}) {
		t.Errorf("renew after cancel = %v %v %v; want it held and cancelled", held, cancelled, err)
	}
	if _, err := s.CancelAsyncRun(ctx(t), "acme", "ext_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CancelAsyncRun of an unknown run: %v, want ErrNotFound", err)
	}
}

func idemKey(account, key, run string, fp byte, at time.Time) store.IdempotencyKey {
	return store.IdempotencyKey{AccountID: account, Key: key, Fingerprint: [32]byte{fp}, RunID: run,
		CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour), LockedUntil: at.Add(10 * time.Minute)}
}

func testIdempotencyKeys(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	k := idemKey("acme", "k-1", "ext_i1", 1, base)
	k.Async = true
	got, created, err := s.PutIdempotencyKey(ctx(t), k)
	if err != nil || !created || got.RunID != "ext_i1" {
		t.Fatalf("first PutIdempotencyKey = %+v %v %v", got, created, err)
	}
	// The same key in another account is another key.
	if _, created, err := s.PutIdempotencyKey(ctx(t), idemKey("other", "k-1", "ext_o1", 2, base)); err != nil || !created {
		t.Errorf("the key in another account: created %v, %v", created, err)
	}
	got, created, err = s.PutIdempotencyKey(ctx(t), idemKey("acme", "k-1", "ext_i2", 2, base.Add(time.Minute)))
	if err != nil || created || got.RunID != "ext_i1" || got.Fingerprint != [32]byte{1} || !got.Async || got.Status != 0 {
		t.Fatalf("second PutIdempotencyKey = %+v %v %v; want the first record", got, created, err)
	}
	checkTime(t, "created_at", got.CreatedAt, base)
	checkTime(t, "expires_at", got.ExpiresAt, base.Add(24*time.Hour))
	if err := s.FinishIdempotencyKey(ctx(t), "acme", "k-1", "ext_other", 201); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishIdempotencyKey(ctx(t), "acme", "k-1", "ext_i1", 200); err != nil {
		t.Fatalf("FinishIdempotencyKey: %v", err)
	}
	got, _, _ = s.PutIdempotencyKey(ctx(t), idemKey("acme", "k-1", "ext_i3", 1, base.Add(time.Hour)))
	if got.Status != 200 || got.RunID != "ext_i1" {
		t.Errorf("after finish: %+v; want status 200 of ext_i1", got)
	}
	// A finished key lives 24 h, its lock notwithstanding.
	got, created, _ = s.PutIdempotencyKey(ctx(t), idemKey("acme", "k-1", "ext_i4", 1, base.Add(23*time.Hour)))
	if created || got.RunID != "ext_i1" {
		t.Errorf("at 23 h: created %v %+v; want the first record", created, got)
	}
	got, created, _ = s.PutIdempotencyKey(ctx(t), idemKey("acme", "k-1", "ext_i5", 1, base.Add(24*time.Hour)))
	if !created || got.RunID != "ext_i5" {
		t.Errorf("at 24 h: created %v %+v; want a new record", created, got)
	}

	// A running key whose lock lapsed (its node died) is taken over.
	if _, created, _ := s.PutIdempotencyKey(ctx(t), idemKey("acme", "k-2", "ext_j1", 1, base)); !created {
		t.Fatal("k-2 not created")
	}
	if _, created, _ := s.PutIdempotencyKey(ctx(t), idemKey("acme", "k-2", "ext_j2", 1, base.Add(9*time.Minute))); created {
		t.Error("k-2 taken over while its lock is live")
	}
	if got, created, _ := s.PutIdempotencyKey(ctx(t), idemKey("acme", "k-2", "ext_j3", 1, base.Add(11*time.Minute))); !created || got.RunID != "ext_j3" {
		t.Errorf("k-2 after its lock lapsed: created %v %+v", created, got)
	}

	// Drop frees the key, only for its own run.
	if err := s.DropIdempotencyKey(ctx(t), "acme", "k-2", "ext_j1"); err != nil {
		t.Fatal(err)
	}
	if _, created, _ := s.PutIdempotencyKey(ctx(t), idemKey("acme", "k-2", "ext_j4", 1, base.Add(12*time.Minute))); created {
		t.Error("dropping another run's key freed it")
	}
	if err := s.DropIdempotencyKey(ctx(t), "acme", "k-2", "ext_j3"); err != nil {
		t.Fatal(err)
	}
	if got, created, _ := s.PutIdempotencyKey(ctx(t), idemKey("acme", "k-2", "ext_j5", 1, base.Add(12*time.Minute))); !created || got.RunID != "ext_j5" {
		t.Errorf("after drop: created %v %+v", created, got)
	}
}

// testIdempotencyConcurrent: of concurrent puts of one key exactly one
// creates it, and every other sees that one.
func testIdempotencyConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []string
	runsSeen := map[string]int{}
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, created, err := s.PutIdempotencyKey(ctx(t), idemKey("acme", "race", fmt.Sprintf("ext_r%02d", i), 7, base))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if created {
				winners = append(winners, got.RunID)
			}
			runsSeen[got.RunID]++
		}()
	}
	wg.Wait()
	if len(winners) != 1 || runsSeen[winners[0]] != 16 || len(runsSeen) != 1 {
		t.Errorf("winners %v, runs seen %v; want one winner seen by all 16", winners, runsSeen)
	}
}
