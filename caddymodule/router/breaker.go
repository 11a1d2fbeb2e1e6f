package router

import (
	"sync"
	"time"

	"socialrouter/caddymodule/registry"
)

// Source statuses computed from the breakers (registry declares active and
// coming_soon only).
const (
	StatusDegraded = "degraded"
	StatusDown     = "down"
)

// Recent-failure accounting for the degraded status: a sliding window of
// one-minute buckets per offer.
const (
	windowBuckets = 5
	bucketSpan    = time.Minute
	// degradedRatio is the share of failed calls in the window at or above
	// which an offer counts as failing (with enough failures).
	degradedRatio = 0.25
)

// verdict is what one offer attempt tells the offer's breaker.
type verdict int

const (
	// neutral says nothing about the upstream's health (the client went
	// away, or our own request program failed).
	neutral verdict = iota
	success
	failure
)

// Breakers holds one circuit breaker per offer id, and operator overrides of
// source statuses. It is safe for concurrent use and is meant to outlive a
// config reload (keep one instance per process and hand it to every New), so
// an upstream that was failing before a reload is not hammered after it. The
// zero value is ready to use; thresholds come from the Config of the latest
// Router built with it.
type Breakers struct {
	mu        sync.Mutex
	threshold int
	cooldown  time.Duration
	now       func() time.Time
	offers    map[string]*breaker
	overrides map[string]string
}

// breaker is the state of one offer. It is closed while openedAt is zero;
// open until openedAt+cooldown; then half-open: one trial call is let
// through, whose result closes or re-opens it.
type breaker struct {
	consecutive int
	openedAt    time.Time
	trial       bool
	window      [windowBuckets]bucket
}

// bucket counts the calls of one minute.
type bucket struct {
	minute int64
	calls  int
	fails  int
}

// NewBreakers returns an empty set of breakers (equivalent to the zero value).
func NewBreakers() *Breakers { return &Breakers{} }

// configure applies a Router's thresholds; the latest Router wins, which is
// what a config reload wants.
func (b *Breakers) configure(threshold int, cooldown time.Duration, now func() time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.threshold, b.cooldown, b.now = threshold, cooldown, now
}

// settings returns the thresholds and the current time; b.mu is held.
func (b *Breakers) settings() (threshold int, cooldown time.Duration, now time.Time) {
	threshold, cooldown = b.threshold, b.cooldown
	if threshold <= 0 {
		threshold = defaultBreakerFailures
	}
	if cooldown <= 0 {
		cooldown = defaultBreakerCooldown
	}
	if b.now != nil {
		return threshold, cooldown, b.now()
	}
	return threshold, cooldown, time.Now()
}

// get returns the breaker of an offer, creating it; b.mu is held.
func (b *Breakers) get(offerID string) *breaker {
	if b.offers == nil {
		b.offers = map[string]*breaker{}
	}
	br, ok := b.offers[offerID]
	if !ok {
		br = &breaker{}
		b.offers[offerID] = br
	}
	return br
}

// refusing reports whether br turns ordinary calls away at now: open and
// cooling down, or half-open with its one trial already in flight.
func (br *breaker) refusing(now time.Time, cooldown time.Duration) bool {
	if br.openedAt.IsZero() {
		return false
	}
	return now.Before(br.openedAt.Add(cooldown)) || br.trial
}

// Open reports whether the offer's breaker currently turns calls away: it
// opened after repeated failures and is cooling down, or its half-open trial
// call is in flight. The router skips such offers unless pinned.
func (b *Breakers) Open(offerID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	br, ok := b.offers[offerID]
	if !ok {
		return false
	}
	_, cooldown, now := b.settings()
	return br.refusing(now, cooldown)
}

// SetOverride sets an operator's status for a source ("active", "degraded",
// "down" or "coming_soon"; the caller validates), or clears it with "". An
// override wins over the computed status, and "down" and "coming_soon" also
// keep the router off the source's offers (unless pinned).
func (b *Breakers) SetOverride(sourceID, status string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if status == "" {
		delete(b.overrides, sourceID)
		return
	}
	if b.overrides == nil {
		b.overrides = map[string]string{}
	}
	b.overrides[sourceID] = status
}

// Override returns the operator's status for a source, if one is set, so
// admin views can tell an override from a computed status.
func (b *Breakers) Override(sourceID string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.overrides[sourceID]
	return s, ok
}

// SourceStatus returns the status a source shows in the providers view:
// the operator's override if set; "coming_soon" if declared so; "down" when
// every one of its live offers has a tripped breaker (open, or half-open and
// not yet proven healthy); "degraded" when some do, or when some offer failed
// often in the last few minutes; else "active". offers are the source's live
// offers (an offer id listed under several services counts once).
func (b *Breakers) SourceStatus(sourceID string, offers []*registry.Offer, declared string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.overrides[sourceID]; ok {
		return s
	}
	if declared == registry.StatusComingSoon {
		return registry.StatusComingSoon
	}
	threshold, _, now := b.settings()
	seen := map[string]bool{}
	tripped, failing := 0, 0
	for _, o := range offers {
		if o == nil || seen[o.ID] {
			continue
		}
		seen[o.ID] = true
		br, ok := b.offers[o.ID]
		if !ok {
			continue
		}
		if !br.openedAt.IsZero() {
			tripped++
		} else if br.recentlyFailing(now, threshold) {
			failing++
		}
	}
	switch {
	case len(seen) > 0 && tripped == len(seen):
		return StatusDown
	case tripped > 0 || failing > 0:
		return StatusDegraded
	}
	return registry.StatusActive
}

// recentlyFailing reports whether the offer failed often in the window: at
// least half the breaker threshold (and 2) failures, making up at least
// degradedRatio of its calls.
func (br *breaker) recentlyFailing(now time.Time, threshold int) bool {
	calls, fails := br.windowCounts(now)
	minFails := max(2, (threshold+1)/2)
	return fails >= minFails && float64(fails) >= degradedRatio*float64(calls)
}

// windowCounts sums the buckets that fall within the window ending at now.
func (br *breaker) windowCounts(now time.Time) (calls, fails int) {
	cur := now.UnixNano() / int64(bucketSpan)
	for _, bk := range br.window {
		if bk.minute > cur-windowBuckets && bk.minute <= cur {
			calls += bk.calls
			fails += bk.fails
		}
	}
	return calls, fails
}

// count adds one call to the window.
func (br *breaker) count(now time.Time, failed bool) {
	cur := now.UnixNano() / int64(bucketSpan)
	bk := &br.window[cur%windowBuckets]
	if bk.minute != cur {
		*bk = bucket{minute: cur}
	}
	bk.calls++
	if failed {
		bk.fails++
	}
}

// refuses reports, without reserving anything, whether a walk would skip
// the offer: its breaker refuses, or an operator marked its source down.
func (b *Breakers) refuses(o *registry.Offer) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if offRoute(b.overrides[o.Source.ID]) {
		return true
	}
	br, ok := b.offers[o.ID]
	if !ok {
		return false
	}
	_, cooldown, now := b.settings()
	return br.refusing(now, cooldown)
}

// offRoute reports whether an operator's status keeps the router off a
// source: down, or coming_soon (which, declared on an offer, keeps it out
// of routing too).
func offRoute(status string) bool {
	return status == StatusDown || status == registry.StatusComingSoon
}

// operatorOff reports whether an operator marked the offer's source down
// or coming_soon.
func (b *Breakers) operatorOff(o *registry.Offer) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return offRoute(b.overrides[o.Source.ID])
}

// acquire asks to call an offer during a failover walk. It refuses while the
// breaker is open (or an operator keeps the source off); once the cooldown is
// over it lets exactly one caller through as the half-open trial (trial is
// then true and the caller must report).
func (b *Breakers) acquire(o *registry.Offer) (ok, trial bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if offRoute(b.overrides[o.Source.ID]) {
		return false, false
	}
	br := b.get(o.ID)
	if br.openedAt.IsZero() {
		return true, false
	}
	_, cooldown, now := b.settings()
	if br.refusing(now, cooldown) {
		return false, false
	}
	br.trial = true
	return true, true
}

// force is acquire for a call that goes ahead whatever the breaker says (a
// pinned offer, or the head when every offer is refused). It takes the trial
// slot when the breaker is half-open and the slot is free, so that other
// walks keep skipping the offer until this call reports.
func (b *Breakers) force(o *registry.Offer) (trial bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.get(o.ID)
	if br.openedAt.IsZero() || br.trial {
		return false
	}
	_, cooldown, now := b.settings()
	if now.Before(br.openedAt.Add(cooldown)) {
		return false
	}
	br.trial = true
	return true
}

// report records the verdict of one call. A success closes the breaker; a
// failure counts towards opening it, and re-opens (restarting the cooldown)
// one that is already open or half-open. It returns true when this failure
// opened a closed breaker, for logging.
func (b *Breakers) report(o *registry.Offer, v verdict, trial bool) (opened bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.get(o.ID)
	if trial {
		br.trial = false
	}
	threshold, _, now := b.settings()
	switch v {
	case success:
		br.count(now, false)
		br.consecutive = 0
		br.openedAt = time.Time{}
	case failure:
		br.count(now, true)
		br.consecutive++
		switch {
		case !br.openedAt.IsZero():
			br.openedAt = now
		case br.consecutive >= threshold:
			br.openedAt = now
			opened = true
		}
	}
	return opened
}

// BreakerState is an offer's circuit-breaker state, for status views and
// metrics.
type BreakerState int

const (
	// BreakerClosed lets calls through.
	BreakerClosed BreakerState = iota
	// BreakerHalfOpen has cooled down: one trial call decides.
	BreakerHalfOpen
	// BreakerOpen turns calls away until its cooldown ends.
	BreakerOpen
)

// State returns the breaker state of an offer (closed for an offer never
// called).
func (b *Breakers) State(offerID string) BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	br, ok := b.offers[offerID]
	if !ok || br.openedAt.IsZero() {
		return BreakerClosed
	}
	_, cooldown, now := b.settings()
	if now.Before(br.openedAt.Add(cooldown)) {
		return BreakerOpen
	}
	return BreakerHalfOpen
}
