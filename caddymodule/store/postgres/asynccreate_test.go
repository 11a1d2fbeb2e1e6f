package postgres_test

import (
	"errors"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
)

// TestCreateGroupTakenIDs: in one group of creates, an id stored already
// fails alone (ErrExists) and does not take the place of a create after
// it; an id twice in the group is stored once; the cap holds across the
// group, in queue order.
func TestCreateGroupTakenIDs(t *testing.T) {
	s := openHolding(t, time.Minute)
	ctx := t.Context()
	now := time.Now().UTC()
	run := func(id string) store.AsyncRun {
		return store.AsyncRun{ID: id, AccountID: "acme", Request: []byte(`{}`), Doc: []byte(`{}`), CreatedAt: now, Deadline: now.Add(time.Hour)}
	}
	if err := s.CreateAsyncRun(ctx, run("ext_a"), 3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ids  []string
		want []error // nil: created
	}{
		// One place left under the cap of 3 after ext_a: b, c, d would
		// take one each; the taken ext_a before them must not take one.
		{"taken id first", []string{"ext_a", "ext_b", "ext_c", "ext_d"}, []error{store.ErrExists, nil, nil, store.ErrAsyncLimit}},
		{"at the cap", []string{"ext_e", "ext_a"}, []error{store.ErrAsyncLimit, store.ErrAsyncLimit}},
	} {
		runs := make([]store.AsyncRun, len(tc.ids))
		for i, id := range tc.ids {
			runs[i] = run(id)
		}
		errs := postgres.CreateInOneGroup(s, ctx, runs, 3)
		for i, err := range errs {
			if !errors.Is(err, tc.want[i]) || (tc.want[i] == nil) != (err == nil) {
				t.Errorf("%s: create %s: %v, want %v", tc.name, tc.ids[i], err, tc.want[i])
			}
		}
	}
	if n, err := s.CountAsyncRuns(ctx, "acme"); err != nil || n != 3 {
		t.Errorf("CountAsyncRuns = %d, %v; want 3", n, err)
	}
	errs := postgres.CreateInOneGroup(s, ctx, []store.AsyncRun{run("ext_x"), run("ext_x")}, 0)
	if errs[0] != nil || !errors.Is(errs[1], store.ErrExists) {
		t.Errorf("one id twice in a group, no cap: %v, %v; want nil, ErrExists", errs[0], errs[1])
	}
	if n, err := s.CountAsyncRuns(ctx, "acme"); err != nil || n != 4 {
		t.Errorf("CountAsyncRuns = %d, %v; want 4", n, err)
	}
}
