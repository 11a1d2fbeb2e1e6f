package caddymodule

import (
	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/router"
)

// offerSources maps every live offer to its source, for the metrics' zero
// series.
func (a *App) offerSources() map[string]string {
	m := map[string]string{}
	for _, s := range a.current().reg.Services {
		for _, o := range s.LiveOffers() {
			m[o.ID] = o.Source.ID
		}
	}
	return m
}

// OfferStates reports the breaker of every live offer (metrics.StatusSource).
func (a *App) OfferStates() []metrics.OfferState {
	var out []metrics.OfferState
	for id, src := range a.offerSources() {
		st := metrics.BreakerClosed
		switch a.shared.breakers.State(id) {
		case router.BreakerOpen:
			st = metrics.BreakerOpen
		case router.BreakerHalfOpen:
			st = metrics.BreakerHalfOpen
		}
		out = append(out, metrics.OfferState{Offer: id, Source: src, State: st})
	}
	return out
}

// SourceStatuses reports every source's status as /v1/providers shows it
// (metrics.StatusSource).
func (a *App) SourceStatuses() []metrics.SourceState {
	reg := a.current().reg
	out := make([]metrics.SourceState, 0, len(reg.Sources))
	for _, src := range reg.Sources {
		out = append(out, metrics.SourceState{Source: src.ID, Status: a.sourceStatus(src.ID)})
	}
	return out
}

// Interface guards
var _ metrics.StatusSource = (*App)(nil)
