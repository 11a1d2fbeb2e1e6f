package cache

import (
	"context"
	"encoding/json"
	"time"
)

// flight is live work on one key in progress on this node: its leader
// does the work (or, when another node holds the key's claim, reads the
// store until that node's entry appears) and lands it; followers wait.
type flight struct {
	done  chan struct{}
	entry *Entry
}

// Flight is one caller's part in a flight: the leader, the poller (this
// node's leader of work another node does) or a follower.
type Flight struct {
	c      *Cache
	key    string
	f      *flight
	leader bool
	poller bool
	since  time.Time
}

// Leader reports whether the caller must do the work and Land it.
func (f *Flight) Leader() bool { return f.leader }

// Lead joins the live work on key in progress on this node, or starts a
// flight the caller leads; on several nodes, a caller that cannot claim
// the key in the shared store follows the node that holds it. It never
// blocks on the work: a call leads the inputs it can, routes and lands
// them, and only then waits for those it follows, so two calls that each
// lead an input the other follows cannot wait for each other.
func (c *Cache) Lead(ctx context.Context, key string, now time.Time) *Flight {
	c.mu.Lock()
	if f, ok := c.flights[key]; ok {
		c.mu.Unlock()
		return &Flight{c: c, key: key, f: f}
	}
	f := &flight{done: make(chan struct{})}
	c.flights[key] = f
	c.mu.Unlock()
	h := &Flight{c: c, key: key, f: f, leader: true, since: now}
	if ok, err := c.st.CacheClaim(ctx, key, now.Add(c.claimFor), now); err == nil && !ok {
		h.leader, h.poller = false, true
	}
	return h
}

// Land publishes the leader's work (nil: it failed or is not cacheable,
// and the followers do their own), drops the claim and ends the flight.
// Store the entry (with the run, or Keep) before: other nodes find it there.
func (h *Flight) Land(ctx context.Context, e *Entry) {
	h.Publish(e)
	h.Unclaim(ctx)
}

// Publish ends the flight on this node with the leader's work (nil: the
// followers do their own), keeping the key's claim in the store, so that
// followers here go on at once while the entry is stored with the
// leader's run, and other nodes keep waiting for it; Unclaim once it is
// stored. (A leader that waited for its own settle before its followers
// went on could wait for a follower that leads what it follows.)
func (h *Flight) Publish(e *Entry) {
	if h.leader {
		h.end(e)
	}
}

// Unclaim drops the key's claim of a published flight.
func (h *Flight) Unclaim(ctx context.Context) {
	if h.leader {
		_ = h.c.st.CacheUnclaim(context.WithoutCancel(ctx), h.key)
	}
}

// end ends the flight with e.
func (h *Flight) end(e *Entry) {
	h.f.entry = e
	h.c.mu.Lock()
	if h.c.flights[h.key] == h.f {
		delete(h.c.flights, h.key)
	}
	h.c.mu.Unlock()
	close(h.f.done)
}

// pollEvery is how often a node following another's work reads the store.
const pollEvery = 50 * time.Millisecond

// Wait waits for a followed flight's entry: ok false when its leader
// failed or ctx ended, and for the poller when the other node's claim
// ended with no entry: the caller then does the work itself.
func (h *Flight) Wait(ctx context.Context) (*Entry, bool) {
	if h.leader {
		return nil, false
	}
	if h.poller {
		e := h.poll(ctx)
		h.end(e)
		return e, e != nil
	}
	select {
	case <-h.f.done:
		return h.f.entry, h.f.entry != nil
	case <-ctx.Done():
		return nil, false
	}
}

// poll reads the store until an entry made after the flight began
// appears, or the key's claim is free.
func (h *Flight) poll(ctx context.Context) *Entry {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now := time.Now().UTC()
		if se, err := h.c.st.CacheGet(ctx, h.key, now); err == nil {
			var e Entry
			if json.Unmarshal(se.Value, &e) == nil && !e.At.Before(h.since) {
				return &e
			}
		}
		if ok, err := h.c.st.CacheClaim(ctx, h.key, now.Add(h.c.claimFor), now); err == nil && ok {
			_ = h.c.st.CacheUnclaim(ctx, h.key)
			return nil
		}
	}
}
