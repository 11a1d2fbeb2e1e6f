package async_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
)

// runner is a Runner and Resumer that waits for its run's context or for
// release, and says how each run ended.
type runner struct {
	mu      sync.Mutex
	started map[string]string // id → "run" or "resume"
	causes  map[string]error
	release chan struct{}
}

func newRunner() *runner {
	return &runner{started: map[string]string{}, causes: map[string]error{}, release: make(chan struct{})}
}

func (r *runner) do(ctx context.Context, ar store.AsyncRun, how string, p async.Progress) async.Outcome {
	r.mu.Lock()
	r.started[ar.ID] = how
	r.mu.Unlock()
	if err := p(ctx, async.State{Doc: []byte(`{"id":"` + ar.ID + `","status":"running","attempts":[{"offer":"o"}]}`),
		Hold: store.Hold{Price: 7, Records: 3}, Resume: []byte(`{"offer":"o"}`)}); err != nil {
		return async.Outcome{}
	}
	select {
	case <-ctx.Done():
	case <-r.release:
	}
	cause := context.Cause(ctx)
	r.mu.Lock()
	r.causes[ar.ID] = cause
	r.mu.Unlock()
	switch {
	case errors.Is(cause, async.ErrCancelled):
		return async.Outcome{Status: "cancelled", Doc: []byte(`{"id":"` + ar.ID + `","status":"cancelled"}`)}
	case cause != nil && !errors.Is(cause, context.DeadlineExceeded):
		return async.Outcome{}
	}
	return async.Outcome{Status: "completed", Doc: []byte(`{"id":"` + ar.ID + `","status":"completed"}`)}
}

func (r *runner) Run(ctx context.Context, ar store.AsyncRun, p async.Progress) async.Outcome {
	return r.do(ctx, ar, "run", p)
}

func (r *runner) Resume(ctx context.Context, ar store.AsyncRun, p async.Progress) async.Outcome {
	return r.do(ctx, ar, "resume", p)
}

func (r *runner) how(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started[id]
}

type notifier struct {
	mu     sync.Mutex
	events map[string]string
}

func (n *notifier) Notify(_ context.Context, account, event string, run []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events[string(run)] = account + " " + event
	return nil
}

func openStore(t *testing.T) *badger.Store {
	t.Helper()
	s, err := badger.Open(t.TempDir(), badger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func newRun(id string, now time.Time) store.AsyncRun {
	return store.AsyncRun{ID: id, AccountID: "acme", KeyID: "key_1", Request: []byte(`{}`), Doc: []byte(`{}`),
		CreatedAt: now, Deadline: now.Add(time.Hour)}
}

// TestWorkerResumesLeftRuns: a worker starting claims at once the runs a
// previous worker left, resumes them, renews their leases, and on their
// end notifies and deletes them.
func TestWorkerResumesLeftRuns(t *testing.T) {
	s := openStore(t)
	now := time.Now()
	for _, id := range []string{"ext_1", "ext_2"} {
		r := newRun(id, now)
		r.Owner, r.LeaseUntil = "dead-node", now.Add(time.Hour)
		if err := s.CreateAsyncRun(t.Context(), r, 0); err != nil {
			t.Fatal(err)
		}
	}
	rn, nt := newRunner(), &notifier{events: map[string]string{}}
	w := async.New(async.Config{Store: s, Owner: "node-a", Lease: 150 * time.Millisecond, Poll: 20 * time.Millisecond})
	w.SetRunner(rn, rn, nt)
	w.Start()
	defer w.Stop()
	waitFor(t, "both runs resumed", func() bool { return rn.how("ext_1") == "resume" && rn.how("ext_2") == "resume" })
	waitFor(t, "the progress stored", func() bool {
		r, err := s.GetAsyncRun(t.Context(), "acme", "ext_1")
		return err == nil && r.HoldPrice == 7 && r.HoldRecords == 3 && string(r.Resume) == `{"offer":"o"}` && r.Owner == "node-a"
	})
	time.Sleep(300 * time.Millisecond) // two leases: only renewal keeps them
	r, err := s.GetAsyncRun(t.Context(), "acme", "ext_1")
	if err != nil || !r.LeaseUntil.After(time.Now()) {
		t.Fatalf("lease not renewed: %+v %v", r, err)
	}
	close(rn.release)
	waitFor(t, "runs deleted", func() bool {
		_, e1 := s.GetAsyncRun(t.Context(), "acme", "ext_1")
		_, e2 := s.GetAsyncRun(t.Context(), "acme", "ext_2")
		return errors.Is(e1, store.ErrNotFound) && errors.Is(e2, store.ErrNotFound)
	})
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if got := nt.events[`{"id":"ext_1","status":"completed"}`]; got != "acme run.completed" {
		t.Errorf("notified %v", nt.events)
	}
}

// TestWorkerCancel: Cancel stops a local run with ErrCancelled; a run
// cancelled in the store (another node's request) stops at the renewal.
func TestWorkerCancel(t *testing.T) {
	s := openStore(t)
	rn := newRunner()
	w := async.New(async.Config{Store: s, Owner: "node-a", Lease: 90 * time.Millisecond, Poll: time.Hour})
	w.SetRunner(rn, rn, nil)
	w.Start()
	defer w.Stop()
	now := time.Now()
	for _, id := range []string{"ext_local", "ext_remote"} {
		r := newRun(id, now)
		r.Owner, r.LeaseUntil = "node-a", now.Add(time.Minute)
		if err := s.CreateAsyncRun(t.Context(), r, 0); err != nil {
			t.Fatal(err)
		}
		w.Submit(r)
	}
	waitFor(t, "both started", func() bool { return rn.how("ext_local") == "run" && rn.how("ext_remote") == "run" })
	done := w.Cancel("ext_local")
	if done == nil {
		t.Fatal("Cancel of a local run returned nil")
	}
	<-done
	if _, err := s.CancelAsyncRun(t.Context(), "acme", "ext_remote"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the remote cancel seen", func() bool { return w.Running() == 0 })
	rn.mu.Lock()
	defer rn.mu.Unlock()
	for _, id := range []string{"ext_local", "ext_remote"} {
		if !errors.Is(rn.causes[id], async.ErrCancelled) {
			t.Errorf("%s ended with %v, want ErrCancelled", id, rn.causes[id])
		}
	}
	if w.Cancel("ext_none") != nil {
		t.Error("Cancel of a run not here returned a channel")
	}
}

// TestWorkerLeaseLost: a run another worker took over stops with
// ErrLeaseLost and stays in the store for that worker.
func TestWorkerLeaseLost(t *testing.T) {
	s := openStore(t)
	rn := newRunner()
	w := async.New(async.Config{Store: s, Owner: "node-a", Lease: 60 * time.Millisecond, Poll: time.Hour})
	w.SetRunner(rn, rn, nil)
	w.Start()
	defer w.Stop()
	now := time.Now()
	r := newRun("ext_1", now)
	r.Owner, r.LeaseUntil = "node-a", now.Add(time.Second)
	if err := s.CreateAsyncRun(t.Context(), r, 0); err != nil {
		t.Fatal(err)
	}
	w.Submit(r)
	waitFor(t, "started", func() bool { return rn.how("ext_1") == "run" })
	// node-b's clock says node-a's lease lapsed (node-a stalled).
	later := time.Now().Add(time.Minute)
	if got, err := s.ClaimAsyncRuns(t.Context(), "node-b", 10, later, later.Add(time.Hour)); err != nil || len(got) != 1 {
		t.Fatalf("node-b claim: %v %v", got, err)
	}
	waitFor(t, "the run stopped", func() bool { return w.Running() == 0 })
	rn.mu.Lock()
	cause := rn.causes["ext_1"]
	rn.mu.Unlock()
	if !errors.Is(cause, async.ErrLeaseLost) {
		t.Errorf("ended with %v, want ErrLeaseLost", cause)
	}
	if got, err := s.GetAsyncRun(t.Context(), "acme", "ext_1"); err != nil || got.Owner != "node-b" {
		t.Errorf("after the loss: %+v %v; want node-b's", got, err)
	}
}
