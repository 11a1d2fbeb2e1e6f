// Package callbacks receives the upstreams' callbacks: the actor
// platform's ad-hoc run webhooks and the dataset provider's notify, posted
// to {callback_base}/_sdr/callbacks/{source}/{run}/{batch}/{token} when the
// upstream work of one batch of a run ends (sources/callback.go builds the
// URL). The Handler authenticates a callback (the URL's token, checked in
// constant time, and the dataset provider's auth_header), reads its payload
// and hands the news to a Waker; the Hub is the Waker of a process whose
// waiting batches hold a goroutine each: it wakes the batch's
// sources.Wait.
package callbacks

import (
	"context"
	"errors"
	"sync"
	"time"

	"socialrouter/caddymodule/sources"
)

// Waker is told of an authenticated callback: the upstream work h of
// batch of run on source ended in state finished. Wake must be quick (the
// upstream waits for the answer) and idempotent: a callback that comes
// again changes nothing. Its errors:
//   - ErrReplayed: the batch was woken already (a duplicate delivery);
//   - ErrNoWaiter: nothing waits for that batch here (it ended, or it
//     waits on another node, which polls after its fallback wait);
//   - ErrMismatch: the batch waits for other work than h (an earlier
//     attempt's run reporting its end late);
//
// all three answered 200 and logged; any other error is answered 500 so
// the upstream delivers the callback again.
type Waker interface {
	Wake(ctx context.Context, source, runID string, batch int, h sources.Handle, finished sources.JobState) error
}

// The Waker's refusals of a callback that changes nothing.
var (
	ErrReplayed = errors.New("the batch was woken already: a replayed callback changes nothing")
	ErrNoWaiter = errors.New("no batch waits here for this callback")
	ErrMismatch = errors.New("the callback reports other upstream work than the batch waits for")
)

// replayMemory is how long the Hub remembers a batch that was woken or
// closed, to tell a replayed callback from one nobody waits for.
const replayMemory = time.Hour

// Hub is the process-local Waker: each waiting batch registers
// (sources.Waits) and selects on its Wait, which Wake closes. It is safe
// for concurrent use and survives config reloads (the app shares one).
type Hub struct {
	mu    sync.Mutex
	waits map[key]*wait
	// ended remembers batches woken or closed lately (replays), pruned
	// once a minute of what is older than replayMemory.
	ended  map[key]time.Time
	pruned time.Time
}

type key struct {
	source, run string
	batch       int
}

var (
	_ Waker         = (*Hub)(nil)
	_ sources.Waits = (*Hub)(nil)
)

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{waits: map[key]*wait{}, ended: map[key]time.Time{}}
}

// Register implements sources.Waits. A second registration of the same
// batch (the batch's next attempt on the same source) replaces the first.
func (hb *Hub) Register(source, runID string, batch int) sources.Wait {
	w := &wait{hub: hb, k: key{source, runID, batch}, woken: make(chan struct{})}
	hb.mu.Lock()
	hb.waits[w.k] = w
	delete(hb.ended, w.k)
	hb.mu.Unlock()
	return w
}

// Waiting is how many batches wait for a callback now.
func (hb *Hub) Waiting() int {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return len(hb.waits)
}

// Wake implements Waker. A callback that comes before its batch learned
// its handle (the upstream answered the start after calling back) is kept
// and fires when Bind names the same work.
func (hb *Hub) Wake(_ context.Context, source, runID string, batch int, h sources.Handle, finished sources.JobState) error {
	k := key{source, runID, batch}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	w := hb.waits[k]
	if w == nil {
		if _, ok := hb.ended[k]; ok {
			return ErrReplayed
		}
		return ErrNoWaiter
	}
	switch {
	case w.fired:
		return ErrReplayed
	case !w.bound:
		w.early, w.earlyState = &h, finished
		return nil
	case !sameWork(w.h, h):
		return ErrMismatch
	}
	hb.fire(w, finished)
	return nil
}

// fire wakes w; hb.mu is held.
func (hb *Hub) fire(w *wait, st sources.JobState) {
	w.state, w.fired = st, true
	close(w.woken)
	hb.ended[w.k] = time.Now()
}

// closeWait ends w's registration (if still the batch's).
func (hb *Hub) closeWait(w *wait) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.waits[w.k] == w {
		// Not remembered as ended unless fired (fire does): a batch that
		// stopped waiting unwoken (its run parked, or it polled after the
		// fallback) may still be woken elsewhere (Waker implementations
		// that fall back on ErrNoWaiter).
		delete(hb.waits, w.k)
	}
	if now := time.Now(); now.Sub(hb.pruned) > time.Minute {
		hb.pruned = now
		for k, at := range hb.ended {
			if now.Sub(at) > replayMemory {
				delete(hb.ended, k)
			}
		}
	}
}

// sameWork reports whether a callback's handle names the work a batch
// waits for: the same run (and dataset, where the callback names one) or
// the same snapshot.
func sameWork(want, got sources.Handle) bool {
	if want.Protocol != got.Protocol {
		return false
	}
	if want.Protocol == sources.ProtocolDatasetScrape {
		return want.SnapshotID == got.SnapshotID
	}
	return want.RunID == got.RunID && (got.DatasetID == "" || want.DatasetID == got.DatasetID)
}

// wait is one batch's registration (sources.Wait).
type wait struct {
	hub   *Hub
	k     key
	woken chan struct{}

	// under hub.mu:
	h          sources.Handle
	bound      bool
	fired      bool
	state      sources.JobState
	early      *sources.Handle // a callback that came before Bind
	earlyState sources.JobState
}

func (w *wait) Bind(h sources.Handle) {
	hb := w.hub
	hb.mu.Lock()
	defer hb.mu.Unlock()
	w.h, w.bound = h, true
	if w.early != nil && !w.fired && hb.waits[w.k] == w && sameWork(h, *w.early) {
		hb.fire(w, w.earlyState)
	}
	w.early = nil
}

func (w *wait) Woken() <-chan struct{} { return w.woken }

func (w *wait) Finished() sources.JobState {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	return w.state
}

func (w *wait) Close() { w.hub.closeWait(w) }
