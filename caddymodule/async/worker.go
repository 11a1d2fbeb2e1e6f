// Package async runs the asynchronous runs of the gateway: a Worker per
// node claims runs in flight through the store (store.Async), runs each
// in a goroutine until all the upstream work it started is recorded, then
// parks it (no goroutine waits: park.go), sweeps its parked runs with one
// poller (poller.go) and resumes each whose work ended, keeps them all
// with one heartbeat (heartbeat.go), stops a run whose lease another
// worker took or whose customer cancelled it, and tells a RunNotifier
// when a run ends. What running a run means (routing,
// billing, settling) is the Runner's, which the api package implements;
// resuming one that a dead worker left is the Resumer's. The package knows
// nothing of HTTP or Caddy.
package async

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// Why a run's context ends before its Runner is done (context.Cause).
var (
	// ErrCancelled: the customer cancelled the run; the Runner settles it
	// as cancelled.
	ErrCancelled = errors.New("the run was cancelled")
	// ErrLeaseLost: another worker took the run over; the Runner must not
	// settle it.
	ErrLeaseLost = errors.New("the run's lease was lost to another worker")
	// ErrStopping: this worker stops (the gateway shuts down); the run is
	// left in the store for the next claim, its hold with it.
	ErrStopping = errors.New("the worker is stopping")
	// ErrParked: every upstream work the run started is recorded and the
	// run is parked (State.Park): its goroutine stops waiting, the work
	// left running, and the node's poller resumes it once the work ended.
	// The Runner must not settle it.
	ErrParked = errors.New("the run is parked until its upstream work ends")
)

// Outcome is how a run ended.
type Outcome struct {
	// Status is the settled run's status (its life's: runs.Life.Settle);
	// "" when it was left unsettled (lease lost,
	// stopping, or a store error), for the next claim.
	Status runs.Status
	// Doc is the settled run's JSON, for the notifier.
	Doc []byte
}

// State is a run as it stands: its document (what GET
// /v1/extractions/{id} shows), its hold, and the Runner's record of the
// upstream work it started (store.AsyncRun.Resume), which a Resumer
// takes back after a crash.
type State struct {
	Doc    []byte
	Hold   store.Hold
	Resume []byte
	// Park: Resume records every upstream work the run waits for, so the
	// run parks in the same write, and its context ends with ErrParked.
	Park bool
	// Quiet is how long a parked run's upstream work needs no check: its
	// upstream calls back when it ends (Wake makes it due then), so the
	// first check is only the fallback for a lost callback. 0: check at
	// CheckMin.
	Quiet time.Duration
}

// Progress writes a run's state durably, for GET /v1/extractions/{id} and
// for the worker that resumes it. Each write replaces the whole state.
type Progress func(ctx context.Context, s State) error

// Runner runs a new run to its end and settles it. ctx ends at the run's
// deadline, or early with a cause of ErrCancelled, ErrLeaseLost or
// ErrStopping.
type Runner interface {
	Run(ctx context.Context, r store.AsyncRun, p Progress) Outcome
}

// Resumer runs a run a previous worker left (its node died or stopped):
// its Doc holds the attempts made so far and its Resume the upstream work
// they started, which the Resumer waits for instead of starting it again.
type Resumer interface {
	Resume(ctx context.Context, r store.AsyncRun, p Progress) Outcome
}

// Checker tells whether a parked run's upstream work ended, with status
// calls that do not wait (the api's AsyncRunner, over sources.Checker).
type Checker interface {
	Check(ctx context.Context, r store.AsyncRun) (ended bool, err error)
}

// Quieter is a Checker that knows which parked runs need fewer checks:
// Quiet is how long run r's work may go unchecked because its upstream
// calls back when it ends (Wake), 0 when it does not. The poller never
// checks such a run sooner again (a check is then only the fallback for
// a lost callback).
type Quieter interface {
	Quiet(r store.AsyncRun) time.Duration
}

// RunNotifier is told when an async run ends: event is "run.completed",
// "run.failed" or "run.cancelled" and run the run's JSON. The webhooks
// service implements it.
type RunNotifier interface {
	Notify(ctx context.Context, accountID, event string, run []byte) error
}

// Defaults of Config.
const (
	DefaultLease      = 30 * time.Second
	DefaultPoll       = 2 * time.Second
	DefaultMaxRunning = 1000
	// DefaultCheckMin and DefaultCheckMax bound the wait between two
	// checks of a parked run: a quarter of the run's age between them.
	DefaultCheckMin = 2 * time.Second
	DefaultCheckMax = 5 * time.Minute
	// DefaultCheckRate bounds the status calls a node's poller makes per
	// second, whatever the runs it holds: what holding them costs stays
	// flat, and a check comes later when more wait.
	DefaultCheckRate = 200
	// DefaultSweep is how often the poller looks for due runs when
	// nothing nudges it.
	DefaultSweep = time.Second
)

// Config tunes a Worker.
type Config struct {
	Store store.Async
	// Owner names this worker in the leases; unique per process.
	Owner string
	// Lease is how long a claim holds a run without renewal: a dead
	// node's runs are taken over after it. Renewed every Lease/3.
	Lease time.Duration
	// Poll is how often the worker claims runs nobody holds.
	Poll time.Duration
	// MaxRunning bounds the runs this worker runs at once in goroutines
	// (parked runs do not count); more wait in the store for a claim.
	MaxRunning int
	// CheckMin, CheckMax, CheckRate and Sweep tune the poller of parked
	// runs (see the defaults).
	CheckMin, CheckMax time.Duration
	CheckRate          int
	Sweep              time.Duration
	Logger             *zap.Logger
}

// Worker runs this node's async runs. It outlives config generations: a
// reload hands it the new generation's Runner with SetRunner.
type Worker struct {
	cfg Config

	mu       sync.Mutex
	runner   Runner
	resumer  Resumer
	checker  Checker
	notifier RunNotifier
	running  map[string]*job

	// nudge wakes the poller at once (a wake or a cancel here).
	nudge  chan struct{}
	checks *checkBudget

	stop    context.CancelCauseFunc
	base    context.Context
	loops   sync.WaitGroup
	jobs    sync.WaitGroup
	started bool
}

// job is one run in flight on this worker.
type job struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// New returns a Worker; Start starts its loops.
func New(cfg Config) *Worker {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = DefaultMaxRunning
	}
	if cfg.CheckMin <= 0 {
		cfg.CheckMin = DefaultCheckMin
	}
	if cfg.CheckMax < cfg.CheckMin {
		cfg.CheckMax = max(DefaultCheckMax, cfg.CheckMin)
	}
	if cfg.CheckRate <= 0 {
		cfg.CheckRate = DefaultCheckRate
	}
	if cfg.Sweep <= 0 {
		cfg.Sweep = DefaultSweep
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	base, stop := context.WithCancelCause(context.Background())
	return &Worker{cfg: cfg, running: map[string]*job{}, base: base, stop: stop,
		nudge: make(chan struct{}, 1), checks: newCheckBudget(cfg.CheckRate)}
}

// Owner is the name this worker's leases carry.
func (w *Worker) Owner() string { return w.cfg.Owner }

// Lease is the lease a claim takes.
func (w *Worker) Lease() time.Duration { return w.cfg.Lease }

// SetRunner hands the worker what runs and resumes runs (a new config
// generation's) and whom to tell when one ends (nil: nobody). Runs in
// flight keep the ones they started with.
func (w *Worker) SetRunner(r Runner, res Resumer, n RunNotifier) {
	w.mu.Lock()
	w.runner, w.resumer, w.notifier = r, res, n
	w.checker, _ = res.(Checker)
	w.mu.Unlock()
}

// Start beats once (so the runs this node parks are held), then starts
// the claim, heartbeat and poller loops; the first claim is at once, so
// a restarted node resumes what it left.
func (w *Worker) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return
	}
	w.started = true
	w.beat()
	w.loops.Add(3)
	go w.claimLoop()
	go w.heartbeatLoop()
	go w.pollLoop()
}

// Stop ends the loops and the runs in flight (ErrStopping: they stay in
// the store, leased until their lease lapses), waits for them, and ends
// the node's heartbeat, so another node (or the next process) takes its
// parked runs at once.
func (w *Worker) Stop() {
	w.stop(ErrStopping)
	w.loops.Wait()
	w.jobs.Wait()
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if started {
		w.endHeartbeat()
	}
}

// Room reports whether the worker runs fewer than its maximum, so a new
// run can be leased to it at once.
func (w *Worker) Room() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running) < w.cfg.MaxRunning && w.base.Err() == nil
}

// Running is the number of runs in flight on this worker.
func (w *Worker) Running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// Submit runs r, created leased to this worker, with the Runner.
func (w *Worker) Submit(r store.AsyncRun) { w.launch(r, false) }

// Cancel stops the run id if it runs here (its Runner then settles it as
// cancelled) and returns a channel closed when it ended; nil when it does
// not run here (its owner sees the cancellation at its next renewal; a
// parked run is due at once, and this node's poller is nudged).
func (w *Worker) Cancel(id string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	j, ok := w.running[id]
	if !ok {
		w.poke()
		return nil
	}
	j.cancel(ErrCancelled)
	return j.done
}

// launch starts r's goroutine, unless it already runs here.
func (w *Worker) launch(r store.AsyncRun, resume bool) {
	w.mu.Lock()
	if _, dup := w.running[r.ID]; dup || w.base.Err() != nil {
		w.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancelCause(w.base)
	j := &job{cancel: cancel, done: make(chan struct{})}
	w.running[r.ID] = j
	runner, resumer, notifier := w.runner, w.resumer, w.notifier
	w.jobs.Add(1)
	w.mu.Unlock()

	go func() {
		defer w.jobs.Done()
		defer close(j.done)
		defer func() {
			w.mu.Lock()
			delete(w.running, r.ID)
			w.mu.Unlock()
			cancel(nil)
		}()
		if r.Cancelled {
			cancel(ErrCancelled)
		}
		dctx, dcancel := context.WithDeadline(ctx, r.Deadline)
		defer dcancel()
		progress := func(pctx context.Context, s State) error {
			up := r
			up.Doc, up.HoldPrice, up.HoldRecords, up.Resume = s.Doc, s.Hold.Price, s.Hold.Records, s.Resume
			up.DueAt = time.Time{}
			if s.Park {
				up.DueAt = time.Now().Add(max(w.cfg.CheckMin, s.Quiet))
			}
			err := w.cfg.Store.UpdateAsyncRun(pctx, w.cfg.Owner, up)
			switch {
			case errors.Is(err, store.ErrLeaseLost):
				cancel(ErrLeaseLost)
			case err == nil && s.Park:
				w.cfg.Logger.Debug("async run parked", zap.String("run_id", r.ID))
				cancel(ErrParked)
			}
			return err
		}
		var out Outcome
		switch {
		case runner == nil:
			w.cfg.Logger.Error("no runner for an async run", zap.String("run_id", r.ID))
			return
		case resume && resumer != nil:
			out = resumer.Resume(dctx, r, progress)
		default:
			out = runner.Run(dctx, r, progress)
		}
		if out.Status == "" {
			return // left for the next claim
		}
		if err := runs.Check(out.Status.Settled(), runs.Removed, runs.Worker); err != nil {
			w.cfg.Logger.Error("an async run ended unsettled", zap.String("run_id", r.ID), zap.Error(err))
			return
		}
		bg := context.WithoutCancel(ctx)
		if notifier != nil {
			if err := notifier.Notify(bg, r.AccountID, out.Status.Event(), out.Doc); err != nil {
				w.cfg.Logger.Error("notifying the end of an async run", zap.String("run_id", r.ID), zap.Error(err))
			}
		}
		if err := w.cfg.Store.DeleteAsyncRun(bg, r.ID); err != nil {
			// The run is settled; the next claim finds it so and deletes it.
			w.cfg.Logger.Error("deleting a settled async run", zap.String("run_id", r.ID), zap.Error(err))
		}
	}()
}

// claimLoop claims runs nobody holds while the worker has room.
func (w *Worker) claimLoop() {
	defer w.loops.Done()
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		w.claim()
		select {
		case <-w.base.Done():
			return
		case <-t.C:
		}
	}
}

// moved asks the run's lifecycle whether the worker may move run id from
// one state to another, and logs a refusal (a bug: the table and this
// code disagree), which leaves the run where it is.
func (w *Worker) moved(id string, from, to runs.State) bool {
	if err := runs.Check(from, to, runs.Worker); err != nil {
		w.cfg.Logger.Error("async run not moved", zap.String("run_id", id), zap.Error(err))
		return false
	}
	return true
}

func (w *Worker) claim() {
	for {
		w.mu.Lock()
		room := w.cfg.MaxRunning - len(w.running)
		w.mu.Unlock()
		if room <= 0 || w.base.Err() != nil {
			break
		}
		now := time.Now()
		// A store may claim fewer than asked at once: claim again while
		// it gives some.
		got, err := w.cfg.Store.ClaimAsyncRuns(w.base, w.cfg.Owner, room, now, now.Add(w.cfg.Lease))
		if err != nil {
			if w.base.Err() == nil {
				w.cfg.Logger.Error("claiming async runs", zap.Error(err))
			}
			break
		}
		if len(got) == 0 {
			break
		}
		parked := 0
		for _, r := range got {
			if !r.DueAt.IsZero() {
				// Stays parked, now this node's: its poller resumes it.
				if w.moved(r.ID, runs.Parked, runs.Parked) {
					parked++
				}
				continue
			}
			if !w.moved(r.ID, runs.Queued, runs.Leased) {
				continue
			}
			w.cfg.Logger.Debug("resuming async run", zap.String("run_id", r.ID), zap.String("account", r.AccountID))
			w.launch(r, true)
		}
		w.cfg.Logger.Info("resumed async runs", zap.Int("runs", len(got)), zap.Int("parked", parked), zap.Int("running", w.Running()))
		if parked > 0 {
			w.poke()
		}
	}
}

func (w *Worker) renew() {
	w.mu.Lock()
	ids := make([]string, 0, len(w.running))
	for id := range w.running {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	held, cancelled, err := w.cfg.Store.RenewAsyncRuns(w.base, w.cfg.Owner, ids, time.Now().Add(w.cfg.Lease))
	if err != nil {
		if w.base.Err() == nil {
			w.cfg.Logger.Error("renewing async run leases", zap.Error(err))
		}
		return
	}
	keep := make(map[string]bool, len(held))
	for _, id := range held {
		keep[id] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if j, ok := w.running[id]; ok && !keep[id] {
			j.cancel(ErrLeaseLost)
		}
	}
	for _, id := range cancelled {
		if j, ok := w.running[id]; ok {
			j.cancel(ErrCancelled)
		}
	}
}
