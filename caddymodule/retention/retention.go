// Package retention runs run_retention in the background: every Interval
// it expires, in batches of Batch runs with a Pause between them, the
// records of runs older than Window (store.Expirer keeps their billing
// facts), then asks the store to give the space back. Each batch is one
// short store write, so settles are never held up for long, and a pass
// that fails is retried at the next one. A pass still going after an
// Interval is losing to the settles: its batches then follow each other
// with CatchUpPause, since a store that grows without bound is worse than
// settles slowed while it catches up.
package retention

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// Defaults of a Runner.
const (
	DefaultBatch = 256
	DefaultPause = 50 * time.Millisecond
	// CatchUpPause is the wait between batches of a pass that outlasted
	// its Interval: enough for the settles queued meanwhile to commit
	// between two batches. With DefaultPause a pass expired at most about
	// 1 900 runs a second on badger (a batch's write, and value-log GC,
	// take the rest), fewer than a node settles at full load, and the
	// bench's retention soak grew its store to 216 % (make bench, 11).
	CatchUpPause    = time.Millisecond
	DefaultInterval = 10 * time.Minute
	// DefaultReclaimEvery is how many bytes of records a pass deletes
	// between two reclaims, so a long pass (a large backlog) gives space
	// back as it goes rather than only at its end.
	DefaultReclaimEvery = 256 << 20
)

// passObserver is told when a complete pass ended (the metrics decorator).
type passObserver interface {
	RetentionPassEnded(at time.Time)
}

// Runner expires old runs' records in the background.
type Runner struct {
	Store  store.Expirer
	Window time.Duration // runs created longer ago than this lose their records
	// Batch is the most runs one store write expires; Pause the wait
	// between batches; Interval the wait between passes. Zero: defaults,
	// and an Interval of a tenth of the window, within 1s..DefaultInterval.
	Batch    int
	Pause    time.Duration
	Interval time.Duration
	// ReclaimEvery is the bytes of records deleted between reclaims
	// within a pass; zero: DefaultReclaimEvery.
	ReclaimEvery int64
	Logger       *zap.Logger
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// PassResult is what one pass did.
type PassResult struct {
	Runs      int   // runs expired
	Bytes     int64 // bytes of documents removed
	Reclaimed int64 // bytes the store's files shrank by
}

func (r *Runner) defaults() {
	if r.Batch <= 0 {
		r.Batch = DefaultBatch
	}
	if r.Pause <= 0 {
		r.Pause = DefaultPause
	}
	if r.Interval <= 0 {
		r.Interval = min(max(r.Window/10, time.Second), DefaultInterval)
	}
	if r.ReclaimEvery <= 0 {
		r.ReclaimEvery = DefaultReclaimEvery
	}
	if r.Logger == nil {
		r.Logger = zap.NewNop()
	}
	if r.Now == nil {
		r.Now = time.Now
	}
}

// Pass expires every run older than the window, batch by batch, then
// reclaims the space. It stops early, with what it did, when ctx ends or a
// batch fails.
func (r *Runner) Pass(ctx context.Context) (PassResult, error) {
	r.defaults()
	start := time.Now()
	var res PassResult
	var unreclaimed int64
	for {
		now := r.Now().UTC()
		b, err := r.Store.ExpireRuns(ctx, now.Add(-r.Window), now, r.Batch)
		if err != nil {
			return res, err
		}
		res.Runs += b.Runs
		res.Bytes += b.Bytes
		if b.Runs < r.Batch && !b.More {
			break
		}
		if unreclaimed += b.Bytes; unreclaimed >= r.ReclaimEvery {
			n, err := r.Store.Reclaim(ctx)
			res.Reclaimed += n
			if err != nil {
				return res, err
			}
			unreclaimed = 0
		}
		pause := r.Pause
		if time.Since(start) > r.Interval {
			pause = min(pause, CatchUpPause)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(pause):
		}
	}
	n, err := r.Store.Reclaim(ctx)
	res.Reclaimed += n
	if err != nil {
		return res, err
	}
	if o, ok := r.Store.(passObserver); ok {
		o.RetentionPassEnded(r.Now())
	}
	return res, nil
}

// Start runs a pass now and then every Interval, until Stop.
func (r *Runner) Start() {
	r.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			start := time.Now()
			res, err := r.Pass(ctx)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				r.Logger.Error("run retention pass failed; retrying at the next pass", zap.Error(err),
					zap.Int("runs_expired", res.Runs))
			case res.Runs > 0 || res.Reclaimed > 0:
				r.Logger.Info("run retention pass", zap.Int("runs_expired", res.Runs), zap.Int64("bytes_deleted", res.Bytes),
					zap.Int64("bytes_reclaimed", res.Reclaimed), zap.Duration("took", time.Since(start)))
			}
			t.Reset(r.Interval)
		}
	}()
}

// Stop ends the background passes and waits for the one under way.
func (r *Runner) Stop() {
	if r.cancel != nil {
		r.cancel()
		r.done.Wait()
	}
}
