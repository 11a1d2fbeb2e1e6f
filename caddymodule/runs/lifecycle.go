// A run's life: its states, the transitions between them, who may make
// each one, and the webhook event a settle emits. This file is the one
// owner of a run's life (DESIGN §11): the API, the async worker and the
// settles ask a Life to move and never set a run's status themselves.
//
// A sync call lives in memory from New to its settle (Running, then
// Completed or Failed). An async run is stored from its 202
// (store.AsyncRun) and moves through Queued, Leased, Running and Upstream
// (its handles recorded) to a settle; a cancel or the loss of its worker
// can come in between. A settled async run keeps its async record until
// its worker has told the webhooks and removed it (Removed); a worker
// that dies in between leaves it settled, and the next claim finds it so.
// Retention later empties any settled run's records (Expired).
//
// The states and the transitions are tables (states, transitions): a new
// state is a row in each.

package runs

import (
	"fmt"
	"sync"
)

// Status is a run's status on the wire (the "status" of a Run document).
// Only a Life sets a Run's Status (Life.Settle); State.Status maps each
// state to it.
type Status string

// Run statuses.
const (
	// StatusRunning: an async run not settled yet.
	StatusRunning Status = "running"
	// StatusCompleted, StatusFailed: a settled run, served or not.
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	// StatusCancelled: its customer cancelled it first (settled with no
	// charge).
	StatusCancelled Status = "cancelled"
)

// State is where a run stands in its life.
type State uint8

// The states of a run. The order is the table's; nothing depends on it.
const (
	// New: made in memory, nothing stored yet.
	New State = iota
	// Queued: an async run stored with no live lease (never claimed, or
	// its worker's lease lapsed), for any node's worker to claim.
	Queued
	// Leased: a worker holds the run's lease; no attempt begun yet.
	Leased
	// Running: an attempt under way, no upstream work recorded for it.
	Running
	// Upstream: the attempt under way started upstream work and its
	// handle is recorded (store.AsyncRun.Resume), so a worker that takes
	// the run over waits for that work instead of starting it again.
	Upstream
	// CancelRequested: its customer cancelled it; its worker aborts the
	// upstream work and settles it cancelled.
	CancelRequested
	// Left: its worker let it go unsettled (the lease was lost to another
	// worker, or the worker stops), its hold and upstream work with it,
	// for the next claim.
	Left
	// Parked: every batch of the attempt under way has its upstream work
	// recorded, so the run waits holding no goroutine: its node's poller
	// (async/poller.go) checks it and resumes it once that work ended, an
	// upstream callback woke it, it was cancelled or its deadline came.
	Parked
	// Completed, Failed, Cancelled: settled (Store.Settle). An async run
	// keeps its async record until Removed.
	Completed
	Failed
	Cancelled
	// Removed: settled, the webhook event sent and the async record
	// deleted.
	Removed
	// Expired: settled, its records emptied by run_retention; the billing
	// facts stay.
	Expired
	numStates
)

// Actor is who moves a run.
type Actor uint8

// The actors of a run's life.
const (
	// Submitter: the API taking a call (execute for a sync call, submit
	// for an async run).
	Submitter Actor = iota + 1
	// Worker: the async worker (async.Worker): claims, leases, hears of
	// cancels, removes settled runs.
	Worker
	// Runner: the router's walk on an async run, through its progress
	// hooks (api/asyncprogress.go): attempts and upstream handles.
	Runner
	// Canceller: POST /v1/extractions/{id}/cancel.
	Canceller
	// Settler: the settle of a run (api settle, settleAsync,
	// settleCancelled), which Store.Settle makes durable.
	Settler
	// Clock: time alone; a lease that lapses (ClaimAsyncRuns then
	// treats the run as unleased).
	Clock
	// Retention: run_retention (store.Expirer.ExpireRuns).
	Retention
	numActors
)

// stateInfo is a state's row: its name, its wire status and the webhook
// event a transition into it emits.
type stateInfo struct {
	name   string
	status Status
	event  string
}

var states = [numStates]stateInfo{
	New:             {"new", "", ""},
	Queued:          {"queued", StatusRunning, ""},
	Leased:          {"leased", StatusRunning, ""},
	Running:         {"running", StatusRunning, ""},
	Upstream:        {"upstream", StatusRunning, ""},
	CancelRequested: {"cancel_requested", StatusRunning, ""},
	Left:            {"left", StatusRunning, ""},
	Parked:          {"parked", StatusRunning, ""},
	Completed:       {"completed", StatusCompleted, "run.completed"},
	Failed:          {"failed", StatusFailed, "run.failed"},
	Cancelled:       {"cancelled", StatusCancelled, "run.cancelled"},
	Removed:         {"removed", "", ""},
	Expired:         {"expired", "", ""},
}

var actors = [numActors]string{
	Submitter: "submitter", Worker: "worker", Runner: "runner", Canceller: "canceller",
	Settler: "settler", Clock: "clock", Retention: "retention",
}

func (s State) String() string {
	if s < numStates {
		return states[s].name
	}
	return fmt.Sprintf("State(%d)", s)
}

func (a Actor) String() string {
	if a < numActors && actors[a] != "" {
		return actors[a]
	}
	return fmt.Sprintf("Actor(%d)", a)
}

// Status is the wire status of a run in s: running until settled, then
// the settled one; "" before it is stored (New) and once its async record
// is gone (Removed, Expired: the stored run keeps its status).
func (s State) Status() Status {
	if s < numStates {
		return states[s].status
	}
	return ""
}

// Event is the webhook event a transition into s emits: run.completed,
// run.failed or run.cancelled for the settled states, "" for the others.
func (s State) Event() string {
	if s < numStates {
		return states[s].event
	}
	return ""
}

// Settled reports whether s is a settled state (Completed, Failed,
// Cancelled): one whose transition in emits an event.
func (s State) Settled() bool { return s.Event() != "" }

// Settled is the settled state of a run with status st; New (not
// settled) for StatusRunning or an unknown status.
func (st Status) Settled() State {
	for s := range numStates {
		if states[s].event != "" && states[s].status == st {
			return s
		}
	}
	return New
}

// Event is the webhook event of a run settled with status st; "" when st
// is not a settled status.
func (st Status) Event() string { return st.Settled().Event() }

// Transition is one allowed move of a run: from a state to another, by
// an actor. Why says when it happens.
type Transition struct {
	From, To State
	By       Actor
	Why      string
}

// live are the states of an async run a worker runs.
var live = []State{Leased, Running, Upstream}

// transitions is every allowed move; Check allows nothing else. Built
// from rows, some of which fan out over several From states.
var transitions = build(
	row(Submitter, "a sync call starts routing (api execute)", []State{New}, Running),
	row(Submitter, "an async run is stored for any node's worker (api submit)", []State{New}, Queued),
	row(Submitter, "an async run is stored leased to this node's worker, which has room (api submit)", []State{New}, Leased),

	row(Worker, "a worker claims it (Worker.claim, Store.ClaimAsyncRuns)", []State{Queued}, Leased),
	row(Clock, "its worker stopped renewing the lease (died, or let it go) and the lease lapsed", append([]State{Left}, live...), Queued),

	row(Runner, "an attempt begins: the first, or a failover to the next offer", []State{Leased, Running, Upstream}, Running),
	row(Runner, "the attempt's upstream work started and its handle is recorded before it is waited for", []State{Running, Upstream}, Upstream),
	row(Runner, "a run taken over resumes the attempt whose upstream work was recorded (AsyncRunner.Resume)", []State{Leased}, Upstream),

	row(Canceller, "its customer cancels it (Store.CancelAsyncRun), again or for the first time", []State{Queued, Leased, Running, Upstream, CancelRequested, Left, Parked}, CancelRequested),
	row(Worker, "the worker hears of the cancel (Worker.Cancel here, its renewal, or a claim of a cancelled run)", append([]State{Queued}, live...), CancelRequested),
	row(Runner, "a failover finds the run cancelled in the store before its money is held (Request.Proceed)", []State{Running, Upstream}, CancelRequested),
	row(Runner, "upstream work started while the cancel stops the walk is recorded: the abort needs its handle", []State{CancelRequested}, CancelRequested),

	row(Worker, "its lease was lost to another worker, or the worker stops: left unsettled, its upstream work running", live, Left),
	row(Runner, "upstream work started as the run is left is recorded, if the lease still allows", []State{Left}, Left),

	row(Runner, "every batch of the attempt under way has its upstream work recorded: the run parks, its goroutine ends (ErrParked)", []State{Upstream}, Parked),
	row(Worker, "a node takes over the parked runs of a node whose heartbeat lapsed: they stay parked, now its poller's (Worker.claim)", []State{Parked}, Parked),
	row(Worker, "its node's poller resumes it: its work ended, a callback woke it, it was cancelled or its deadline came (Worker.resume)", []State{Parked}, Leased),

	row(Settler, "the walk ends served: settled and charged", []State{Running, Upstream, CancelRequested, Left}, Completed),
	row(Settler, "served whole from the freshness cache or another call's work: no attempt began", []State{Leased}, Completed),
	row(Settler, "the walk ends unserved, the call no longer prepares, no offer could be paid for, or the deadline passed", []State{Leased, Running, Upstream, CancelRequested, Left}, Failed),
	row(Settler, "the cancel stopped it: settled with nothing charged, its hold released", []State{CancelRequested}, Cancelled),
	row(Runner, "a claim finds it settled already: its worker died between the settle and the removal; the event is sent again", []State{Leased, CancelRequested}, Completed, Failed, Cancelled),

	row(Worker, "the settled run's event was handed to the webhooks and its async record deleted", []State{Completed, Failed, Cancelled}, Removed),
	row(Retention, "run_retention empties its records and keeps its billing facts", []State{Completed, Failed, Cancelled, Removed}, Expired),
)

// row is the transitions from each of from to each of to, by by.
func row(by Actor, why string, from []State, to ...State) []Transition {
	var ts []Transition
	for _, f := range from {
		for _, t := range to {
			ts = append(ts, Transition{From: f, To: t, By: by, Why: why})
		}
	}
	return ts
}

func build(rows ...[]Transition) []Transition {
	var ts []Transition
	for _, r := range rows {
		ts = append(ts, r...)
	}
	return ts
}

// allowed[from][to] is the set of actors (bit 1<<Actor) that may move a
// run from from to to.
var allowed = func() (m [numStates][numStates]uint16) {
	for _, t := range transitions {
		m[t.From][t.To] |= 1 << t.By
	}
	return m
}()

// Transitions returns every allowed transition, in the table's order.
func Transitions() []Transition { return append([]Transition(nil), transitions...) }

// IllegalError is a move the lifecycle does not allow.
type IllegalError struct {
	From, To State
	By       Actor
}

func (e *IllegalError) Error() string {
	return fmt.Sprintf("a run's life: %s may not move a run from %s to %s", e.By, e.From, e.To)
}

// Check returns nil if by may move a run from from to to, else an
// *IllegalError.
func Check(from, to State, by Actor) error {
	if from < numStates && to < numStates && by < numActors && allowed[from][to]&(1<<by) != 0 {
		return nil
	}
	return &IllegalError{From: from, To: to, By: by}
}

// Life is one run's state as the process that runs it holds it, moved
// only through Check. Safe for concurrent use: the worker (cancel, lease
// lost) and the runner (attempts, settle) move the same Life, and the
// first of two racing moves wins (a cancel that comes after the settle is
// refused).
type Life struct {
	mu sync.Mutex
	at State
}

// Begin is the life of a run by starts, moved from New to to.
func Begin(to State, by Actor) (*Life, error) {
	l := &Life{}
	if err := l.Move(to, by); err != nil {
		return nil, err
	}
	return l, nil
}

// At is the life of a run read back at s: a run claimed from the store
// (Queued with its lease now this worker's, CancelRequested if it was
// cancelled meanwhile) or found settled.
func At(s State) *Life { return &Life{at: s} }

// State is where the run stands now.
func (l *Life) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at
}

// Move moves the run to to, by by; an *IllegalError (and no move) if the
// lifecycle does not allow it from where the run stands.
func (l *Life) Move(to State, by Actor) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := Check(l.at, to, by); err != nil {
		return err
	}
	l.at = to
	return nil
}

// Settle moves the run to the settled state to (Completed, Failed or
// Cancelled) by the Settler and sets run.Status to match, before the
// store makes it durable (Store.Settle): the one place a Run's Status is
// set. A settle the store does not commit leaves the stored run as it
// was; this Life is then dropped and the run is left for the next claim.
func (l *Life) Settle(run *Run, to State) error {
	if !to.Settled() {
		return &IllegalError{From: l.State(), To: to, By: Settler}
	}
	if err := l.Move(to, Settler); err != nil {
		return err
	}
	run.Status = to.Status()
	return nil
}

// Found moves a run claimed from the store to the settled state of its
// stored status st (a worker died between its settle and its removal),
// by the Runner.
func (l *Life) Found(st Status) error {
	to := st.Settled()
	if !to.Settled() {
		return &IllegalError{From: l.State(), To: to, By: Runner}
	}
	return l.Move(to, Runner)
}
