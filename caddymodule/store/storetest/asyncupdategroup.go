package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// testAsyncUpdateGrouped: progress writes of many runs at once, some by a
// node that does not hold its run, some parking theirs: each run holds its
// own write (or, written by a stranger, none: ErrLeaseLost), and a parked
// one the node's lease. A store that groups concurrent updates
// (PostgreSQL) writes them in one statement: a write must not land on
// another run, nor a stranger's on any.
func testAsyncUpdateGrouped(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	const runs = 24
	lease := base.Add(time.Hour).Truncate(time.Microsecond) // stores keep microseconds
	for i := range runs {
		r := asyncRun(fmt.Sprintf("ext_u%02d", i), "acme", base)
		r.Owner, r.LeaseUntil = "node1", lease
		if err := s.CreateAsyncRun(ctx(t), r, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Run i is written by a stranger when i%4 == 1, parked when i%4 == 2.
	stranger := func(i int) bool { return i%4 == 1 }
	parked := func(i int) bool { return i%4 == 2 }
	due := base.Add(time.Minute).Truncate(time.Microsecond)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := asyncRun(fmt.Sprintf("ext_u%02d", i), "acme", base)
			r.Doc = []byte(fmt.Sprintf(`{"id":"ext_u%02d","status":"running","step":%d}`, i, i))
			r.HoldPrice, r.HoldRecords, r.Resume = credits.Micros(100+i), i, []byte(fmt.Sprintf(`{"offer":"o%d"}`, i))
			if parked(i) {
				r.DueAt = due
			}
			owner := "node1"
			if stranger(i) {
				owner = "node2"
			}
			errs[i] = s.UpdateAsyncRun(ctx(t), owner, r)
		}()
	}
	wg.Wait()
	for i := range runs {
		id := fmt.Sprintf("ext_u%02d", i)
		got, err := s.GetAsyncRun(ctx(t), "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		if stranger(i) {
			if !errors.Is(errs[i], store.ErrLeaseLost) {
				t.Errorf("%s written by node2: %v, want ErrLeaseLost", id, errs[i])
			}
			if want := asyncRun(id, "acme", base); !bytes.Equal(got.Doc, want.Doc) || got.HoldRecords != want.HoldRecords || got.Resume != nil {
				t.Errorf("%s changed by a stranger's write: %s, %d records, resume %s", id, got.Doc, got.HoldRecords, got.Resume)
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("%s: %v", id, errs[i])
			continue
		}
		wantDoc := fmt.Sprintf(`{"id":"%s","status":"running","step":%d}`, id, i)
		if string(got.Doc) != wantDoc || got.HoldRecords != i || got.HoldPrice != credits.Micros(100+i) ||
			string(got.Resume) != fmt.Sprintf(`{"offer":"o%d"}`, i) {
			t.Errorf("%s holds %s, %d records at %d, resume %s; want its own write", id, got.Doc, got.HoldRecords, got.HoldPrice, got.Resume)
		}
		switch {
		case parked(i) && (!got.DueAt.Equal(due) || !got.LeaseUntil.Equal(store.NodeLease)):
			t.Errorf("%s parked: due %s, lease %s; want %s and the node's lease", id, got.DueAt, got.LeaseUntil, due)
		case !parked(i) && (!got.DueAt.IsZero() || !got.LeaseUntil.Equal(lease)):
			t.Errorf("%s not parked: due %s, lease %s; want none and its lease %s", id, got.DueAt, got.LeaseUntil, lease)
		}
	}
}
