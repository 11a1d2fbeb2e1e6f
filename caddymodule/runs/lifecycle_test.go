package runs

import (
	"errors"
	"sync"
	"testing"
)

// TestLifecycleMoves: the lifecycle allows the moves a run makes and
// refuses, with an *IllegalError naming the move, those it must not.
func TestLifecycleMoves(t *testing.T) {
	for _, tc := range []struct {
		from, to State
		by       Actor
		ok       bool
	}{
		// A sync call.
		{New, Running, Submitter, true},
		{Running, Completed, Settler, true},
		{Running, Failed, Settler, true},
		// An async run, from its 202 to its removal.
		{New, Queued, Submitter, true},
		{New, Leased, Submitter, true},
		{Queued, Leased, Worker, true},
		{Leased, Running, Runner, true},
		{Running, Upstream, Runner, true},
		{Upstream, Upstream, Runner, true},
		{Upstream, Running, Runner, true}, // failover
		{Upstream, Completed, Settler, true},
		{Completed, Removed, Worker, true},
		{Removed, Expired, Retention, true},
		// Cancel.
		{Queued, CancelRequested, Canceller, true},
		{Upstream, CancelRequested, Canceller, true},
		{Upstream, CancelRequested, Worker, true},
		{Running, CancelRequested, Runner, true},
		{CancelRequested, CancelRequested, Canceller, true},
		{CancelRequested, Cancelled, Settler, true},
		{CancelRequested, Completed, Settler, true}, // served before the cancel reached it
		{Cancelled, Removed, Worker, true},
		// Lost, left, taken over.
		{Upstream, Left, Worker, true},
		{Left, Queued, Clock, true},
		{Leased, Upstream, Runner, true}, // resumed by handle
		{Left, Completed, Settler, true},
		{Leased, Failed, Runner, true}, // found settled
		{Leased, Cancelled, Runner, true},
		// Parked: no goroutine, its node's poller.
		{Upstream, Parked, Runner, true},
		{Parked, Parked, Worker, true}, // taken over, still parked
		{Parked, Leased, Worker, true}, // the poller resumes it
		{Parked, CancelRequested, Canceller, true},

		// Refused.
		{Running, Parked, Runner, false},               // parked with work not recorded
		{Parked, Running, Runner, false},               // an attempt with no goroutine resumed
		{Parked, Completed, Settler, false},            // settled without reading its work
		{Parked, Leased, Runner, false},                // only the poller resumes it
		{New, Completed, Settler, false},               // settled before it began
		{Running, Cancelled, Settler, false},           // cancelled with no cancel asked
		{Completed, CancelRequested, Canceller, false}, // a cancel after the settle
		{Completed, CancelRequested, Worker, false},
		{Completed, Left, Worker, false},    // a lease lost after the settle
		{Completed, Failed, Settler, false}, // settled twice
		{Cancelled, Completed, Settler, false},
		{Left, Running, Runner, false},            // an attempt after the hand-over
		{CancelRequested, Running, Runner, false}, // a failover after the cancel
		{CancelRequested, Left, Worker, false},    // the first cause stays
		{Queued, Running, Runner, false},          // routed with no lease
		{Queued, Leased, Submitter, false},        // only a worker claims
		{Running, Completed, Runner, false},       // only the settler settles
		{Running, Removed, Worker, false},         // removed unsettled
		{Removed, Removed, Worker, false},
		{Expired, Completed, Settler, false},
		{Leased, Running, Actor(0), false},
		{State(200), Running, Runner, false},
	} {
		err := Check(tc.from, tc.to, tc.by)
		if tc.ok != (err == nil) {
			t.Errorf("Check(%s → %s by %s) = %v, want ok %v", tc.from, tc.to, tc.by, err, tc.ok)
			continue
		}
		l := At(tc.from)
		merr := l.Move(tc.to, tc.by)
		var ie *IllegalError
		switch {
		case tc.ok && (merr != nil || l.State() != tc.to):
			t.Errorf("Move(%s → %s by %s) = %v, at %s", tc.from, tc.to, tc.by, merr, l.State())
		case !tc.ok && (!errors.As(merr, &ie) || ie.From != tc.from || ie.To != tc.to || ie.By != tc.by || l.State() != tc.from):
			t.Errorf("Move(%s → %s by %s) = %v, at %s; want an IllegalError and no move", tc.from, tc.to, tc.by, merr, l.State())
		}
	}
}

// TestLifecycleTable: every state is reached and left (but the last),
// every settled state has its status and its event, and the statuses map
// back to their settled states.
func TestLifecycleTable(t *testing.T) {
	in, out := map[State]bool{}, map[State]bool{}
	for _, tr := range Transitions() {
		if tr.Why == "" || tr.By == 0 || tr.By >= numActors {
			t.Errorf("transition %+v: no actor or no why", tr)
		}
		in[tr.To], out[tr.From] = true, true
	}
	for s := range numStates {
		if s.String() == "" {
			t.Errorf("state %d has no name", s)
		}
		if s != New && !in[s] {
			t.Errorf("no transition into %s", s)
		}
		if s != Expired && !out[s] {
			t.Errorf("no transition out of %s", s)
		}
	}
	for _, c := range []struct {
		s      State
		status Status
		event  string
	}{
		{Completed, StatusCompleted, "run.completed"},
		{Failed, StatusFailed, "run.failed"},
		{Cancelled, StatusCancelled, "run.cancelled"},
		{Upstream, StatusRunning, ""},
		{Queued, StatusRunning, ""},
		{Removed, "", ""},
	} {
		if c.s.Status() != c.status || c.s.Event() != c.event || c.s.Settled() != (c.event != "") {
			t.Errorf("%s: status %q event %q settled %v; want %q %q", c.s, c.s.Status(), c.s.Event(), c.s.Settled(), c.status, c.event)
		}
		if c.event != "" && (c.status.Settled() != c.s || c.status.Event() != c.event) {
			t.Errorf("status %q: settled state %s, event %q; want %s", c.status, c.status.Settled(), c.status.Event(), c.s)
		}
	}
	if StatusRunning.Settled() != New || Status("bogus").Event() != "" {
		t.Error("a running or unknown status maps to a settled state")
	}
}

// TestLifeSettle: Settle sets the run's status with the move, and refuses
// a state that is not a settle, or a settle the run's state forbids,
// leaving the status as it was.
func TestLifeSettle(t *testing.T) {
	run := &Run{}
	if err := At(Upstream).Settle(run, Completed); err != nil || run.Status != StatusCompleted {
		t.Fatalf("Settle = %v, status %q", err, run.Status)
	}
	for _, c := range []struct {
		from, to State
	}{{Upstream, Cancelled}, {Upstream, Running}, {Completed, Failed}} {
		run := &Run{}
		if err := At(c.from).Settle(run, c.to); err == nil || run.Status != "" {
			t.Errorf("Settle %s → %s = %v, status %q; want refused", c.from, c.to, err, run.Status)
		}
	}
	l := At(Leased)
	if err := l.Found(StatusCancelled); err != nil || l.State() != Cancelled {
		t.Errorf("Found(cancelled) = %v at %s", err, l.State())
	}
	if err := At(Leased).Found(StatusRunning); err == nil {
		t.Error("Found(running) was allowed")
	}
	if _, err := Begin(Completed, Submitter); err == nil {
		t.Error("Begin at completed was allowed")
	}
}

// TestLifeRace: a cancel racing the settle; exactly one of them wins, and
// a cancel that lost finds the run settled.
func TestLifeRace(t *testing.T) {
	for range 200 {
		l, err := Begin(Leased, Submitter)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Move(Upstream, Runner); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var cancelErr, settleErr error
		run := &Run{}
		wg.Add(2)
		go func() { defer wg.Done(); cancelErr = l.Move(CancelRequested, Worker) }()
		go func() { defer wg.Done(); settleErr = l.Settle(run, Completed) }()
		wg.Wait()
		if settleErr != nil {
			t.Fatalf("the settle lost: %v (a cancelled run may still settle served)", settleErr)
		}
		if cancelErr == nil && l.State() != Completed {
			t.Fatalf("at %s", l.State())
		}
		if cancelErr != nil && !errors.As(cancelErr, new(*IllegalError)) {
			t.Fatalf("cancel: %v", cancelErr)
		}
	}
}
