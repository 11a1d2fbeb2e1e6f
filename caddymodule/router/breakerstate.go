package router

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
