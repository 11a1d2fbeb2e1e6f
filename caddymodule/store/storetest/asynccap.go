package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// testAsyncCapConcurrent: creates racing past an account's cap of runs in
// flight let exactly the cap in; the other account is not counted; a
// settled (deleted) run frees its place; the list is newest first.
func testAsyncCapConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	const limit, tries = 10, 40
	if err := s.CreateAsyncRun(ctx(t), asyncRun("ext_o1", "other", base), limit); err != nil {
		t.Fatalf("other account's run: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, tries)
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.CreateAsyncRun(ctx(t), asyncRun(fmt.Sprintf("ext_m%02d", i), "acme", base.Add(time.Duration(i)*time.Second)), limit)
		}()
	}
	wg.Wait()
	created := 0
	for i, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, store.ErrAsyncLimit):
			t.Errorf("create %d: %v, want nil or ErrAsyncLimit", i, err)
		}
	}
	if created != limit {
		t.Fatalf("%d of %d concurrent creates stored, want the cap %d", created, tries, limit)
	}
	for _, tc := range []struct {
		account string
		want    int
	}{{"acme", limit}, {"other", 1}, {"nobody", 0}} {
		if n, err := s.CountAsyncRuns(ctx(t), tc.account); err != nil || n != tc.want {
			t.Errorf("CountAsyncRuns(%s) = %d, %v; want %d", tc.account, n, err, tc.want)
		}
	}
	list, err := s.ListAsyncRuns(ctx(t), "acme", 3)
	if err != nil || len(list) != 3 {
		t.Fatalf("ListAsyncRuns(acme, 3) = %d runs, %v; want 3", len(list), err)
	}
	for i := 1; i < len(list); i++ {
		if !list[i].CreatedAt.Before(list[i-1].CreatedAt) {
			t.Errorf("ListAsyncRuns not newest first: %s at %s after %s at %s", list[i].ID, list[i].CreatedAt, list[i-1].ID, list[i-1].CreatedAt)
		}
	}
	if list[0].AccountID != "acme" || string(list[0].Doc) == "" {
		t.Errorf("ListAsyncRuns first = %+v", list[0])
	}
	if err := s.CreateAsyncRun(ctx(t), asyncRun("ext_m99", "acme", base), limit); !errors.Is(err, store.ErrAsyncLimit) {
		t.Errorf("create at the cap: %v, want ErrAsyncLimit", err)
	}
	if err := s.DeleteAsyncRun(ctx(t), list[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAsyncRun(ctx(t), asyncRun("ext_m99", "acme", base), limit); err != nil {
		t.Errorf("create after a run settled: %v, want nil", err)
	}
	if n, _ := s.CountAsyncRuns(ctx(t), "acme"); n != limit {
		t.Errorf("CountAsyncRuns(acme) after delete and create = %d, want %d", n, limit)
	}
}
