package metrics

import (
	"context"
	"sync"
	"time"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

// Store decorates a store.Store: it times Settle, counts what Settle
// served and charged per offer, and forwards Capabilities.
// Every other method passes through untouched (embedded), so methods added
// to store.Store later pass through too.
type Store struct {
	store.Store
	kind string
	// open is the set of call ids holding a reservation on this node, so
	// the gauge counts a hold once however often failover re-sizes it.
	open sync.Map
}

// InstrumentStore wraps s; kind ("badger", "postgres") is the store label.
func InstrumentStore(s store.Store, kind string) *Store {
	settleDuration.WithLabelValues(kind, resultOK)
	reserveDuration.WithLabelValues(kind, resultOK)
	openReservations.WithLabelValues(kind)
	startRetentionSeries(kind)
	writables.add(kind, s)
	return &Store{Store: s, kind: kind}
}

// Capabilities forwards the decorated store's optional parts as they are
// (the decorator adds none and hides none), so a caller asking for the
// backup never unwraps the decorator.
func (s *Store) Capabilities() store.Capabilities { return s.Store.Capabilities() }

// Settle times the settlement and counts the records and credits charged.
func (s *Store) Settle(ctx context.Context, st store.Settlement) (store.SettleResult, error) {
	start := time.Now()
	res, err := s.Store.Settle(ctx, st)
	if err == nil && st.Run != nil {
		s.closed(st.Run.ID)
	}
	settleDuration.WithLabelValues(s.kind, result(err)).Observe(time.Since(start).Seconds())
	// A test run's records came from an example payload and its credits
	// from a test balance: no offer served or earned them.
	if err == nil && st.Offer != "" && res.Records > 0 && (st.Run == nil || !testmode.IsTest(st.Run.AccountID)) {
		if st.Lines == nil {
			recordsServed.WithLabelValues(st.Offer).Add(float64(res.Records))
			creditsCharged.add(st.Offer, res.Charged)
		} else {
			countLines(st.Lines[:min(res.Records, len(st.Lines))])
		}
	}
	return res, err
}

// countLines counts the settled records of a run that several offers
// served, each under its own offer.
func countLines(lines []store.Line) {
	for _, l := range lines {
		recordsServed.WithLabelValues(l.Offer).Inc()
		creditsCharged.add(l.Offer, l.Price)
	}
}

// Reserve times the reservation and counts the call's hold as open while
// it covers at least one record.
func (s *Store) Reserve(ctx context.Context, h store.Hold) (store.HoldResult, error) {
	start := time.Now()
	res, err := s.Store.Reserve(ctx, h)
	s.ObserveReserve(start, err)
	switch {
	case err != nil:
	case res.Records > 0:
		if _, loaded := s.open.LoadOrStore(h.ID, struct{}{}); !loaded {
			s.ReservationOpened()
		}
	default:
		s.closed(h.ID)
	}
	return res, err
}

// Release drops the call's hold and closes it in the gauge.
func (s *Store) Release(ctx context.Context, id string) error {
	err := s.Store.Release(ctx, id)
	if err == nil {
		s.closed(id)
	}
	return err
}

// closed closes the hold of call id in the gauge, if it was open.
func (s *Store) closed(id string) {
	if _, ok := s.open.LoadAndDelete(id); ok {
		s.ReservationClosed()
	}
}

// ObserveReserve records one credit reservation that took since start.
func (s *Store) ObserveReserve(start time.Time, err error) {
	reserveDuration.WithLabelValues(s.kind, result(err)).Observe(time.Since(start).Seconds())
}

// ReservationOpened and ReservationClosed keep the open-reservations gauge:
// one opened per successful reserve, one closed per settle or release.
func (s *Store) ReservationOpened() { openReservations.WithLabelValues(s.kind).Inc() }

// ReservationClosed: see ReservationOpened.
func (s *Store) ReservationClosed() { openReservations.WithLabelValues(s.kind).Dec() }

// Interface guards
var (
	_ store.Store = (*Store)(nil)
)
