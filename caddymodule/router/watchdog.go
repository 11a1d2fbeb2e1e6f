package router

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// watchdog cancels an attempt when the upstream shows no activity for the
// soft timeout. Times are monotonic nanoseconds since start. Silence is
// measured between upstream answers: a wait the upstream documents (a sync
// wait, waitForFinish, the pause between polls) is announced by the batch's
// client and does not count until that batch hears from the upstream again.
type watchdog struct {
	start time.Time
	last  atomic.Int64
	// quiet holds, per batch, the end of the documented wait it announced:
	// silence before it is expected. A batch's own activity ends it (the
	// answer it waited for began); another batch's does not.
	quiet []atomic.Int64
	soft  time.Duration
	// pulses are the batches' hooks (pulse), made when the watchdog is, so
	// the attempt arms it once and its batches only read theirs.
	pulses []pulse

	// mu guards the timer against a stop while it fires.
	mu      sync.Mutex
	stopped bool
	t       *time.Timer
}

// newWatchdog arms the soft timeout of an attempt of batches batches: it
// cancels with errSoftTimeout once the upstream is idle for soft, until
// stop is called. It runs on a timer, not a goroutine of its own: a call
// held in flight by a slow upstream costs no stack for its watchdog.
func newWatchdog(soft time.Duration, batches int, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{start: time.Now(), soft: soft, quiet: make([]atomic.Int64, batches), pulses: make([]pulse, batches)}
	for i := range w.pulses {
		w.pulses[i] = w.pulse(i)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = time.AfterFunc(soft, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return
		}
		idle := w.idle()
		if idle >= w.soft {
			cancel(errSoftTimeout)
			return
		}
		w.t.Reset(w.soft - idle)
	})
	return w
}

// stop disarms the watchdog once the attempt is over.
func (w *watchdog) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.t.Stop()
}

func (w *watchdog) now() int64 { return int64(time.Since(w.start)) }

// pulse is how batch i tells the watchdog of its upstream: activity
// (bytes received, a poll answered) and a documented wait it begins. The
// attempt hands it to the batch, whose call passes it on as
// sources.Call.Activity and Waiting; clients call both concurrently.
type pulse struct {
	activity func()
	waiting  func(time.Duration)
}

// pulse makes batch i's pulse.
func (w *watchdog) pulse(i int) pulse {
	q := &w.quiet[i]
	return pulse{
		activity: func() {
			now := w.now()
			w.last.Store(now)
			if q.Load() > now {
				q.Store(now)
			}
		},
		waiting: func(d time.Duration) {
			now := w.now()
			w.last.Store(now)
			q.Store(now + int64(d))
		},
	}
}

// idle is how long the upstream has been silent beyond what was announced.
func (w *watchdog) idle() time.Duration {
	until := w.last.Load()
	for i := range w.quiet {
		until = max(until, w.quiet[i].Load())
	}
	return time.Duration(w.now() - until)
}
