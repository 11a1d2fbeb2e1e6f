package async_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/store"
)

// parker is a Runner that parks each run as soon as it starts (its work
// recorded), a Checker whose work ends when ended is set, and a Resumer
// that completes a resumed run at once (cancelled if it was).
type parker struct {
	mu      sync.Mutex
	causes  map[string]error
	resumed map[string]bool
	ended   atomic.Bool
	checks  atomic.Int32
}

func (p *parker) Run(ctx context.Context, ar store.AsyncRun, prog async.Progress) async.Outcome {
	if err := prog(ctx, async.State{Doc: []byte(`{"id":"` + ar.ID + `","status":"running"}`), Hold: store.Hold{Price: 7, Records: 3},
		Resume: []byte(`{"offer":"o","started":[{"handle":"run:r/dataset:d"}]}`), Park: true}); err != nil {
		return async.Outcome{}
	}
	<-ctx.Done()
	p.mu.Lock()
	p.causes[ar.ID] = context.Cause(ctx)
	p.mu.Unlock()
	return async.Outcome{}
}

func (p *parker) Resume(ctx context.Context, ar store.AsyncRun, _ async.Progress) async.Outcome {
	p.mu.Lock()
	p.resumed[ar.ID] = true
	p.mu.Unlock()
	if errors.Is(context.Cause(ctx), async.ErrCancelled) {
		return async.Outcome{Status: "cancelled", Doc: []byte(`{"id":"` + ar.ID + `","status":"cancelled"}`)}
	}
	return async.Outcome{Status: "completed", Doc: []byte(`{"id":"` + ar.ID + `","status":"completed"}`)}
}

func (p *parker) Check(context.Context, store.AsyncRun) (bool, error) {
	p.checks.Add(1)
	return p.ended.Load(), nil
}

func (p *parker) wasResumed(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resumed[id]
}

// TestWorkerParks: a run whose work is recorded parks: its goroutine
// ends (ErrParked), the store holds it parked under the node's
// heartbeat, the poller checks it while its work runs and resumes it
// once the work ended, and it is settled and deleted.
func TestWorkerParks(t *testing.T) {
	s := openStore(t)
	p := &parker{causes: map[string]error{}, resumed: map[string]bool{}}
	nt := &notifier{events: map[string]string{}}
	w := async.New(async.Config{Store: s, Owner: "node-a", Lease: time.Minute, Poll: time.Hour,
		CheckMin: 20 * time.Millisecond, CheckMax: 40 * time.Millisecond, Sweep: 10 * time.Millisecond, CheckRate: 1000})
	w.SetRunner(p, p, nt)
	w.Start()
	defer w.Stop()
	r := newRun("ext_p", time.Now())
	r.Owner, r.LeaseUntil = "node-a", time.Now().Add(time.Minute)
	if err := s.CreateAsyncRun(t.Context(), r, 0); err != nil {
		t.Fatal(err)
	}
	w.Submit(r)
	waitFor(t, "the run parked, its goroutine gone", func() bool {
		st, err := s.GetAsyncRun(t.Context(), "acme", "ext_p")
		return err == nil && !st.DueAt.IsZero() && w.Running() == 0
	})
	p.mu.Lock()
	cause := p.causes["ext_p"]
	p.mu.Unlock()
	if !errors.Is(cause, async.ErrParked) {
		t.Errorf("the parked run's context ended with %v, want ErrParked", cause)
	}
	waitFor(t, "a few checks", func() bool { return p.checks.Load() >= 3 })
	if p.wasResumed("ext_p") {
		t.Fatal("resumed before its work ended")
	}
	p.ended.Store(true)
	waitFor(t, "the run resumed and deleted", func() bool {
		_, err := s.GetAsyncRun(t.Context(), "acme", "ext_p")
		return p.wasResumed("ext_p") && errors.Is(err, store.ErrNotFound)
	})
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if got := nt.events[`{"id":"ext_p","status":"completed"}`]; got != "acme run.completed" {
		t.Errorf("notified %v", nt.events)
	}
}

// TestWorkerParkedCancelAndWake: a parked run is checked late (CheckMin
// long), but a wake makes it due at once, and a cancel resumes it
// cancelled without any check.
func TestWorkerParkedCancelAndWake(t *testing.T) {
	s := openStore(t)
	p := &parker{causes: map[string]error{}, resumed: map[string]bool{}}
	w := async.New(async.Config{Store: s, Owner: "node-a", Lease: time.Minute, Poll: time.Hour,
		CheckMin: time.Hour, Sweep: time.Hour, CheckRate: 1000})
	w.SetRunner(p, p, nil)
	w.Start()
	defer w.Stop()
	for _, id := range []string{"ext_w", "ext_c"} {
		r := newRun(id, time.Now())
		r.Owner, r.LeaseUntil = "node-a", time.Now().Add(time.Minute)
		if err := s.CreateAsyncRun(t.Context(), r, 0); err != nil {
			t.Fatal(err)
		}
		w.Submit(r)
	}
	waitFor(t, "both parked", func() bool { return w.Running() == 0 && p.checks.Load() == 0 })
	time.Sleep(50 * time.Millisecond)
	if _, err := s.CancelAsyncRun(t.Context(), "acme", "ext_c"); err != nil {
		t.Fatal(err)
	}
	if done := w.Cancel("ext_c"); done != nil {
		t.Fatal("Cancel of a parked run returned a running job")
	}
	waitFor(t, "the cancelled run settled", func() bool {
		_, err := s.GetAsyncRun(t.Context(), "acme", "ext_c")
		return errors.Is(err, store.ErrNotFound)
	})
	if p.checks.Load() != 0 {
		t.Errorf("%d checks for a cancelled run", p.checks.Load())
	}
	p.ended.Store(true)
	if err := w.Wake(t.Context(), "ext_w"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the woken run resumed", func() bool {
		_, err := s.GetAsyncRun(t.Context(), "acme", "ext_w")
		return p.wasResumed("ext_w") && errors.Is(err, store.ErrNotFound)
	})
}

// quietParker is a parker whose runs' upstream calls back (Quieter): once
// checked, a run is not checked again before its quiet time.
type quietParker struct {
	*parker
	quiet time.Duration
}

func (q quietParker) Quiet(store.AsyncRun) time.Duration { return q.quiet }

// TestWorkerQuietRunsCheckedRarely: a parked run whose upstream calls back
// is re-checked after its quiet time, not the poller's short interval: the
// checks that would have come every 20 ms stop after the first, and the
// run's due time moves an hour ahead; a wake still resumes it at once.
func TestWorkerQuietRunsCheckedRarely(t *testing.T) {
	for _, tc := range []struct {
		name      string
		quiet     time.Duration
		maxChecks int32
	}{
		{"without callbacks, checked every interval", 0, 1 << 30},
		{"with callbacks, checked once then quiet", time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			p := quietParker{&parker{causes: map[string]error{}, resumed: map[string]bool{}}, tc.quiet}
			w := async.New(async.Config{Store: s, Owner: "node-a", Lease: time.Minute, Poll: time.Hour,
				CheckMin: 20 * time.Millisecond, CheckMax: 40 * time.Millisecond, Sweep: 10 * time.Millisecond, CheckRate: 1000})
			w.SetRunner(p, p, nil)
			w.Start()
			defer w.Stop()
			r := newRun("ext_q", time.Now())
			r.Owner, r.LeaseUntil = "node-a", time.Now().Add(time.Minute)
			if err := s.CreateAsyncRun(t.Context(), r, 0); err != nil {
				t.Fatal(err)
			}
			w.Submit(r)
			waitFor(t, "a first check", func() bool { return p.checks.Load() >= 1 })
			time.Sleep(300 * time.Millisecond)
			n := p.checks.Load()
			if tc.quiet == 0 && n < 3 {
				t.Errorf("%d checks in 300 ms at a 20-40 ms interval, want several", n)
			}
			if n > tc.maxChecks {
				t.Errorf("%d checks, want at most %d", n, tc.maxChecks)
			}
			if tc.quiet > 0 {
				st, err := s.GetAsyncRun(t.Context(), "acme", "ext_q")
				if err != nil || time.Until(st.DueAt) < 50*time.Minute {
					t.Errorf("due at %v (%v), want about an hour ahead", st.DueAt, err)
				}
			}
			p.ended.Store(true)
			if err := w.Wake(t.Context(), "ext_q"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the woken run resumed", func() bool { return p.wasResumed("ext_q") })
		})
	}
}
