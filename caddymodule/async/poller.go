package async

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// The poller: one goroutine per node sweeps its parked runs that are due
// (store.DueAsyncRuns, a batch at a time, earliest first), checks each
// one's upstream work with status calls that do not wait (Checker; at
// most CheckRate a second for the whole node, a few at once), puts back
// the unfinished with a later due time (a quarter of the run's age,
// between CheckMin and CheckMax, never past its deadline; one store call
// a batch), and resumes the others in a goroutine each, for as long as
// reading and settling them takes: a run whose work ended, a cancelled
// run (its Runner aborts the work and settles it cancelled), a run at
// its deadline (its Runner fails it and aborts the work). A wake (an
// upstream callback, Wake) or a cancel makes a parked run due at once.

// sweepBatch is how many due runs one store read returns.
const sweepBatch = 256

// checkParallel bounds the status calls in flight at once.
const checkParallel = 16

// checkTimeout bounds one run's status calls.
const checkTimeout = 10 * time.Second

// pollLoop sweeps every Sweep, or at once when nudged.
func (w *Worker) pollLoop() {
	defer w.loops.Done()
	t := time.NewTicker(w.cfg.Sweep)
	defer t.Stop()
	for {
		w.sweep()
		select {
		case <-w.base.Done():
			return
		case <-t.C:
		case <-w.nudge:
		}
	}
}

// poke nudges the poller without waiting.
func (w *Worker) poke() {
	select {
	case w.nudge <- struct{}{}:
	default:
	}
}

// Wake makes parked run runID due at once, wherever it is parked (an
// upstream called back to say its work ended): its owner's poller checks
// it at its next sweep, at once when the owner is this node. A run a
// goroutine waits for, or one already settled, is left as it is.
func (w *Worker) Wake(ctx context.Context, runID string) error {
	owner, parked, err := w.cfg.Store.WakeAsyncRun(ctx, runID, time.Now())
	if err != nil {
		return err
	}
	if parked && owner == w.cfg.Owner {
		w.poke()
	}
	return nil
}

// sweep handles this node's due runs, a batch at a time, until none is
// due or the worker has no room for the runs to resume.
func (w *Worker) sweep() {
	for w.base.Err() == nil {
		now := time.Now()
		due, err := w.cfg.Store.DueAsyncRuns(w.base, w.cfg.Owner, now, sweepBatch)
		if err != nil {
			if w.base.Err() == nil {
				w.cfg.Logger.Error("reading due async runs", zap.Error(err))
			}
			return
		}
		if len(due) == 0 {
			return
		}
		full := w.sweepBatch(due)
		if full || len(due) < sweepBatch {
			return
		}
	}
}

// sweepBatch checks and resumes or delays due runs; full reports that the
// worker had no room left for a run to resume (the rest stay due).
func (w *Worker) sweepBatch(due []store.AsyncRun) (full bool) {
	w.mu.Lock()
	checker := w.checker
	w.mu.Unlock()
	var (
		mu    sync.Mutex
		ids   []string
		times []time.Time
		wg    sync.WaitGroup
		sem   = make(chan struct{}, checkParallel)
	)
	later := func(r store.AsyncRun, at time.Time) {
		mu.Lock()
		ids, times = append(ids, r.ID), append(times, at)
		mu.Unlock()
	}
	for _, r := range due {
		now := time.Now()
		switch {
		case w.runs(r.ID):
			// Its goroutine is still ending (it parked a moment ago), or
			// resuming: look again later.
			later(r, now.Add(w.cfg.CheckMin))
			continue
		case !w.Room():
			full = true
		case r.Cancelled || !now.Before(r.Deadline) || checker == nil:
			w.resume(r)
			continue
		}
		if full {
			break
		}
		if err := w.checks.wait(w.base); err != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(w.base, checkTimeout)
			ended, err := checker.Check(ctx, r)
			cancel()
			switch {
			case err != nil:
				w.cfg.Logger.Debug("checking a parked async run", zap.String("run_id", r.ID), zap.Error(err))
				later(r, w.nextCheck(r, time.Now()))
			case ended:
				w.resume(r)
			default:
				next := w.nextCheck(r, time.Now())
				if q, ok := checker.(Quieter); ok {
					if at := time.Now().Add(q.Quiet(r)); at.After(next) {
						next = at
						if next.After(r.Deadline) {
							next = r.Deadline
						}
					}
				}
				later(r, next)
			}
		}()
	}
	wg.Wait()
	if len(ids) > 0 {
		if err := w.cfg.Store.DelayAsyncRuns(w.base, w.cfg.Owner, ids, times); err != nil && w.base.Err() == nil {
			w.cfg.Logger.Error("delaying parked async runs", zap.Error(err))
		}
	}
	return full
}

// nextCheck is when parked run r is checked next: a quarter of its age
// from now, within CheckMin and CheckMax, jittered by ±10 % so runs
// parked together spread, and at its deadline at the latest.
func (w *Worker) nextCheck(r store.AsyncRun, now time.Time) time.Time {
	d := min(max(now.Sub(r.CreatedAt)/4, w.cfg.CheckMin), w.cfg.CheckMax)
	d = d*9/10 + rand.N(d/5+1)
	if at := now.Add(d); at.Before(r.Deadline) {
		return at
	}
	return r.Deadline
}

// runs reports whether run id runs in a goroutine here.
func (w *Worker) runs(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.running[id]
	return ok
}

// resume gives parked run r back to a goroutine of this worker, which
// resumes it through the Resumer (its upstream work is read at once, or
// aborted when the run is cancelled or at its deadline).
func (w *Worker) resume(r store.AsyncRun) {
	if !w.moved(r.ID, runs.Parked, runs.Leased) {
		return
	}
	if err := w.cfg.Store.UnparkAsyncRun(w.base, w.cfg.Owner, r.ID, time.Now().Add(w.cfg.Lease)); err != nil {
		if w.base.Err() == nil {
			w.cfg.Logger.Warn("unparking an async run", zap.String("run_id", r.ID), zap.Error(err))
		}
		return
	}
	w.launch(r, true)
}

// checkBudget paces the poller's status calls: at most rate a second,
// whatever the runs parked.
type checkBudget struct {
	mu   sync.Mutex
	next time.Time
	gap  time.Duration
}

func newCheckBudget(rate int) *checkBudget {
	return &checkBudget{gap: time.Second / time.Duration(max(rate, 1))}
}

// wait returns when the next check may go, or ctx's error.
func (b *checkBudget) wait(ctx context.Context) error {
	b.mu.Lock()
	now := time.Now()
	at := b.next
	if at.Before(now) {
		at = now
	}
	b.next = at.Add(b.gap)
	b.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
