package badger

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"
)

// leaseIndex knows, in memory, who holds each async run in flight and
// until when, and when a parked run is due: a badger directory is opened
// by one process, so every write of a run passes here (after its
// transaction commits), and the index is rebuilt as the store opens. A
// claim and the poller's sweep read it instead of decoding every stored
// run: with 100,000 runs parked, a claim every two seconds that decoded
// them all cost more than the runs. The transactions check the stored
// record again; the index only finds candidates.
//
// What the index costs while nothing is due does not grow with the runs
// parked: each node's parked runs are in a heap by due time, so a sweep
// with nothing due reads one entry, and a claim passes over a live
// node's parked runs without looking at them (they are all held by its
// heartbeat). Only the runs not parked (running in goroutines, or
// queued: a few, bounded by the workers' room) are looked at one by one.
// Walking all 100,000 parked runs at every sweep and every claim (one and
// a half times a second) made holding them cost twice what holding 10,000
// did (issue 38).
type leaseIndex struct {
	mu   sync.Mutex
	runs map[string]leaseMeta
	// active are the runs not parked.
	active map[string]struct{}
	// parked is each node's parked runs, earliest due first.
	parked map[string]*dueHeap
	// nodes is each node's heartbeat: until when it lives. A node that
	// never beat in this process is dead (its process is gone).
	nodes map[string]time.Time
	// seq numbers the index's writes: a heap entry whose seq is not its
	// run's any more is stale, and dropped when met.
	seq uint64
}

// leaseMeta is what a claim or a sweep needs of a run; times in Unix
// nanoseconds (nanos), to keep the 100,000 entries small and free of
// pointers but the owner's.
type leaseMeta struct {
	owner   string
	lease   int64
	created int64
	due     int64 // 0: not parked
	seq     uint64
}

// nanos is t in Unix nanoseconds, 0 for the zero time, and clamped to
// what an int64 holds (store.NodeLease is in the year 9999).
func nanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Year() >= 2262:
		return math.MaxInt64
	case t.Year() < 1678:
		return math.MinInt64
	}
	return t.UnixNano()
}

func metaOf(r asyncRecord) leaseMeta {
	return leaseMeta{owner: r.Owner, lease: nanos(r.LeaseUntil), created: nanos(r.CreatedAt), due: nanos(r.DueAt)}
}

// set records run id as stored.
func (x *leaseIndex) set(id string, r asyncRecord) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.runs == nil {
		x.runs, x.active, x.parked = map[string]leaseMeta{}, map[string]struct{}{}, map[string]*dueHeap{}
	}
	m := metaOf(r)
	old, had := x.runs[id]
	if had && old.due != 0 && m.due == old.due && m.owner == old.owner {
		// Parked as it was (its document or hold changed): its heap
		// entry stands.
		m.seq = old.seq
		x.runs[id] = m
		return
	}
	if had {
		x.unlink(id, old)
	}
	x.seq++
	m.seq = x.seq
	x.runs[id] = m
	if m.due == 0 {
		x.active[id] = struct{}{}
		return
	}
	h := x.parked[m.owner]
	if h == nil {
		h = &dueHeap{}
		x.parked[m.owner] = h
	}
	h.push(dueEntry{due: m.due, seq: m.seq, id: id})
	h.live++
}

// unlink takes run id, as m says it was, out of active or its node's
// heap (its entry there goes stale: dropped when met, or when the heap
// is rebuilt because the stale entries outnumber the live ones); x.mu is
// held.
func (x *leaseIndex) unlink(id string, m leaseMeta) {
	if m.due == 0 {
		delete(x.active, id)
		return
	}
	h := x.parked[m.owner]
	if h == nil {
		return
	}
	if h.live--; h.live <= 0 {
		delete(x.parked, m.owner)
		return
	}
	if len(h.e) > 2*h.live+1024 {
		h.e = slices.DeleteFunc(h.e, func(e dueEntry) bool { return !x.current(e) })
		h.heapify()
	}
}

// current reports whether heap entry e is its run's; x.mu is held.
func (x *leaseIndex) current(e dueEntry) bool {
	m, ok := x.runs[e.id]
	return ok && m.seq == e.seq
}

func (x *leaseIndex) remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m, ok := x.runs[id]; ok {
		x.unlink(id, m)
		delete(x.runs, id)
	}
}

// beat records node's heartbeat.
func (x *leaseIndex) beat(node string, until time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.nodes == nil {
		x.nodes = map[string]time.Time{}
	}
	x.nodes[node] = until
}

// nodeLive reports whether node's heartbeat lives at now; x.mu is held.
func (x *leaseIndex) nodeLive(node string, now time.Time) bool {
	until, ok := x.nodes[node]
	return ok && now.Before(until)
}

// claimable lists the runs no live lease holds at now, oldest first, at
// most n: the runs not parked whose lease lapsed, and the parked runs of
// the nodes whose heartbeat lapsed.
func (x *leaseIndex) claimable(s *Store, now time.Time, n int) []string {
	type cand struct {
		id string
		at int64
	}
	var cands []cand
	x.mu.Lock()
	for id := range x.active {
		if m := x.runs[id]; !s.liveLocked(m, now) {
			cands = append(cands, cand{id, m.created})
		}
	}
	for node, h := range x.parked {
		if x.nodeLive(node, now) {
			continue
		}
		for _, e := range h.e {
			if x.current(e) {
				cands = append(cands, cand{e.id, x.runs[e.id].created})
			}
		}
	}
	x.mu.Unlock()
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(a.at, b.at) })
	ids := make([]string, 0, min(n, len(cands)))
	for _, c := range cands[:min(n, len(cands))] {
		ids = append(ids, c.id)
	}
	return ids
}

// due lists owner's parked runs due at now, earliest first, at most n:
// it takes them off the top of the node's heap and puts them back, so a
// sweep with nothing due reads one entry.
func (x *leaseIndex) due(owner string, now time.Time, n int) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	h := x.parked[owner]
	if h == nil {
		return nil
	}
	at := now.UnixNano()
	var took []dueEntry
	for len(h.e) > 0 && len(took) < n {
		e := h.e[0]
		if !x.current(e) {
			h.pop()
			continue
		}
		if e.due > at {
			break
		}
		took = append(took, h.pop())
	}
	ids := make([]string, len(took))
	for i, e := range took {
		ids[i] = e.id
		h.push(e)
	}
	return ids
}

// dueHeap is a node's parked runs, a binary min-heap by due time; live
// counts its current entries (the rest are stale).
type dueHeap struct {
	e    []dueEntry
	live int
}

type dueEntry struct {
	due int64
	seq uint64
	id  string
}

func (h *dueHeap) push(e dueEntry) {
	h.e = append(h.e, e)
	h.up(len(h.e) - 1)
}

func (h *dueHeap) pop() dueEntry {
	top, last := h.e[0], len(h.e)-1
	h.e[0] = h.e[last]
	h.e[last] = dueEntry{}
	h.e = h.e[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h *dueHeap) heapify() {
	for i := len(h.e)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *dueHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.e[p].due <= h.e[i].due {
			return
		}
		h.e[p], h.e[i] = h.e[i], h.e[p]
		i = p
	}
}

func (h *dueHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h.e) {
			return
		}
		if c+1 < len(h.e) && h.e[c+1].due < h.e[c].due {
			c++
		}
		if h.e[i].due <= h.e[c].due {
			return
		}
		h.e[i], h.e[c] = h.e[c], h.e[i]
		i = c
	}
}
