// Async progress: everything that writes an async run's progress while
// the router walks its offers — runProgress (the router's Proceed,
// OnAttempt and OnHandle hooks), its seeding from a resumed run, and the
// running document (runningDoc) it writes through async.Progress.

package api

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/sources"
	"socialrouter/caddymodule/store"
)

// runningRun is the document of an async run in flight: the Run of the
// API with status running, no completed_at yet, and the attempts so far.
type runningRun struct {
	ID          string            `json:"id"`
	Kind        string            `json:"kind,omitempty"`
	Status      runs.Status       `json:"status"`
	Platform    string            `json:"platform,omitempty"`
	Service     string            `json:"service,omitempty"`
	Source      string            `json:"source,omitempty"`
	Type        string            `json:"type,omitempty"`
	URL         string            `json:"url"`
	Queries     []string          `json:"queries,omitempty"`
	CreditsUsed int64             `json:"credits_used"`
	Data        []json.RawMessage `json:"data"`
	Pagination  runs.Pagination   `json:"pagination"`
	CreatedAt   time.Time         `json:"created_at"`
	Attempts    []runs.Attempt    `json:"attempts"`
	Livemode    bool              `json:"livemode"`
}

func runningDoc(run *runs.Run, at runs.State, attempts []runs.Attempt) []byte {
	if attempts == nil {
		attempts = []runs.Attempt{}
	}
	b, _ := json.Marshal(runningRun{
		ID: run.ID, Kind: run.Kind, Status: at.Status(), Platform: run.Platform, Service: run.Service,
		Source: run.Source, Type: run.Type, URL: run.URL, Queries: run.Queries, Data: []json.RawMessage{},
		Pagination: run.Pagination, CreatedAt: run.CreatedAt, Attempts: attempts, Livemode: run.Livemode,
	})
	return b
}

// Outcomes of the attempts of a running run that are not the router's:
// the one under way, and one that ended without serving (the router
// tells how only when the walk ends).
const (
	outcomeRunning    = "running"
	outcomeFailedOver = "failed_over"
)

// runProgress is an async run's progress as the router walks its offers
// (router.Request's Proceed, OnAttempt and OnHandle; the money is the
// run's billing.Call alone): each attempt beginning writes the running
// document with the attempts so far, and the run's hold; each upstream
// work started is written (the resume record) before the work is waited
// for, so a worker that takes the run over resumes it instead of starting
// it again; and a failover first reads whether the run was cancelled.
type runProgress struct {
	run      *runs.Run
	progress async.Progress
	// life is the run's life: each attempt moves it to Running, each
	// upstream work recorded to Upstream.
	life *runs.Life
	// runCtx is the worker's context of the run: cancelled, no attempt
	// begins.
	runCtx context.Context
	// cancelled reads whether the run is cancelled in the store: a cancel
	// made on another node reaches this worker only at its next renewal,
	// and no failover may start paid work for it meanwhile.
	cancelled func(context.Context) bool

	// mu orders the writes: the last one written is the newest state.
	mu       sync.Mutex
	attempts []runs.Attempt
	hold     store.Hold
	resume   resumeRecord
	// resuming: the next attempt to begin is the recorded one, again.
	resuming bool
	// stopped: a failover found the run cancelled in the store.
	stopped bool

	// mayPark: the run may park once every batch of the attempt under
	// way reported its work here (reported, of batches): its goroutine
	// then stops waiting and the node's poller resumes it. Not an
	// attempt of a chunk failover (partial): its resume would not keep
	// what the offers before it served.
	mayPark  bool
	partial  bool
	batches  int
	reported map[int]bool
	// quietFor is API.callbackQuiet: a parked run whose source calls
	// back is first checked after its callback fallback, not at once.
	quietFor func(offer string) time.Duration
}

// proceed stops a failover of a run cancelled in the store, before its
// money is held; the first attempt and the resumed one do not ask.
func (b *runProgress) proceed(ctx context.Context, o *registry.Offer) error {
	b.mu.Lock()
	failover := len(b.attempts) > 0 && !(b.resuming && o.ID == b.resume.Offer)
	b.mu.Unlock()
	if failover && b.cancelled != nil && b.cancelled(ctx) {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		_ = b.life.Move(runs.CancelRequested, runs.Runner)
		return async.ErrCancelled
	}
	return nil
}

// began records an attempt beginning, its money held (or its offer
// passed over as unpayable), and writes the progress.
func (b *runProgress) began(ctx context.Context, at router.Begun) error {
	o, covered := at.Offer, at.Records
	b.mu.Lock()
	defer b.mu.Unlock()
	switch n := len(b.attempts); {
	case b.resuming && o.ID == b.resume.Offer && !at.Unpayable:
		// The recorded attempt begins again, with its work (Upstream).
		b.resume.Records = covered
	default:
		var moved error
		if !at.Unpayable {
			moved = b.life.Move(runs.Running, runs.Runner)
		}
		if moved != nil {
			return moved
		}
		if n > 0 && b.attempts[n-1].Outcome == outcomeRunning {
			b.attempts[n-1].Outcome = outcomeFailedOver
		}
		b.resume = resumeRecord{}
		if !at.Unpayable {
			b.attempts = append(b.attempts, runs.Attempt{Offer: o.ID, Outcome: outcomeRunning, Records: 0})
			b.resume = resumeRecord{Offer: o.ID, Records: covered}
		} else {
			b.attempts = append(b.attempts, runs.Attempt{Offer: o.ID, Outcome: router.OutcomeUnpayable, Message: at.Note})
		}
	}
	b.resuming = false
	b.partial, b.batches, b.reported = at.Partial, 0, nil
	b.hold = store.Hold{Price: o.Price, Records: covered}
	// An error here leaves GET showing older progress; a lost lease
	// stops the run through its context.
	_ = b.write(ctx)
	if err := context.Cause(b.runCtx); handedOff(err) && !at.Unpayable {
		// Cancelled or handed over meanwhile: no attempt begins.
		return err
	}
	return nil
}

// write writes the run's state as it stands; b.mu is held.
func (b *runProgress) write(ctx context.Context) error {
	return b.writeParking(ctx, false)
}

// writeParking writes the run's state, parking the run with it when
// park; b.mu is held.
func (b *runProgress) writeParking(ctx context.Context, park bool) error {
	var rec []byte
	if b.resume.Offer != "" {
		r := b.resume
		before := b.attempts[:len(b.attempts)-1] // the last is the one under way
		if before == nil {
			before = []runs.Attempt{}
		}
		r.Before = &before
		rec, _ = json.Marshal(r)
	}
	st := async.State{Doc: runningDoc(b.run, b.life.State(), b.attempts), Hold: b.hold, Resume: rec, Park: park}
	if park && b.quietFor != nil {
		st.Quiet = b.quietFor(b.resume.Offer)
	}
	return b.progress(ctx, st)
}

// park writes the run's state and parks it: every upstream work of its
// attempt is recorded (a run resumed with such a record).
func (b *runProgress) park(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.writeParking(context.WithoutCancel(ctx), true)
}

// cancelledInStore reports whether a failover stopped because the run
// was cancelled in the store.
func (b *runProgress) cancelledInStore() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

// resumeFrom seeds the progress with the state of a resumed run.
func (b *runProgress) resumeFrom(from router.Resumed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attempts = append(slices.Clip(from.Before), runs.Attempt{Offer: from.Offer, Outcome: outcomeRunning})
	for _, s := range from.Started {
		b.attempts[len(b.attempts)-1].Handles = sources.MergeHandles(b.attempts[len(b.attempts)-1].Handles, s.Handle)
	}
	b.resume = resumeRecord{Offer: from.Offer, Records: from.Records, Started: from.Started}
	b.resuming = true
	_ = b.life.Move(runs.Upstream, runs.Runner) // from Leased: a run claimed
}

// started records upstream work the attempt under way started (the
// router's OnHandle), durably before the work is waited for.
func (b *runProgress) started(o *registry.Offer, s router.Started) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o.ID != b.resume.Offer {
		return // a late batch of an attempt already over: its work was aborted
	}
	// Refused only once the run is settled; the handle is recorded
	// whatever: the abort or the next worker needs it.
	_ = b.life.Move(runs.Upstream, runs.Runner)
	b.resume.Started = append(b.resume.Started, s)
	if n := len(b.attempts); n > 0 {
		b.attempts[n-1].Handles = sources.MergeHandles(b.attempts[n-1].Handles, s.Handle)
	}
	// Written even when the run is ending (cancelled): the abort needs
	// the handle. An error leaves the work unrecorded; a lost lease stops
	// the run through its context. The last batch's work recorded, the
	// run parks in the same write (its context ends with ErrParked).
	_ = b.writeParking(context.WithoutCancel(b.runCtx), b.allReported(s))
}

// allReported counts s among the batches that reported their work and
// reports whether the run may park now; b.mu is held.
func (b *runProgress) allReported(s router.Started) bool {
	if !b.mayPark || b.partial || s.Batches <= 0 {
		return false
	}
	if b.reported == nil {
		b.reported = map[int]bool{}
	}
	b.batches = s.Batches
	b.reported[s.Batch] = true
	return len(b.reported) == b.batches && b.runCtx.Err() == nil
}
