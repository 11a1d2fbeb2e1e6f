package postgres

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"socialrouter/caddymodule/store"
)

// A database that cannot write (its disk full: SQLSTATE 53100; an I/O
// error: class 58) fails every reservation, so a call already answers 503
// before its upstream; writeState makes that visible before the call (the
// API's check, readiness, sdr_store_writable) and says why. A write that
// failed so marks the store unwritable; any reservation or settle that
// succeeds, or a probe write (at most one a second, from Writable), marks
// it writable again.
type writeState struct {
	failed    atomic.Pointer[store.UnwritableError]
	probing   atomic.Bool
	lastProbe atomic.Int64 // Unix ns
	fault     atomic.Pointer[error]
}

// probeInterval is the least time between two probe writes.
const probeInterval = time.Second

// unwritable classifies a write error: nil unless the database says it
// cannot write.
func unwritable(err error) *store.UnwritableError {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil
	}
	switch {
	case pe.Code == "53100": // disk_full
		return &store.UnwritableError{Reason: store.ReasonDiskFull, Err: err}
	case strings.HasPrefix(pe.Code, "58"): // system error: io_error, …
		return &store.UnwritableError{Reason: store.ReasonWriteFailed, Err: err}
	}
	return nil
}

// noteWrite records the outcome of a write.
func (s *Store) noteWrite(err error) {
	if err == nil {
		if s.ws.failed.Load() != nil {
			s.ws.failed.Store(nil)
		}
		return
	}
	if u := unwritable(err); u != nil {
		s.ws.failed.Store(u)
	}
}

// injected is the write fault tests inject: the error the database
// would return, while set.
func (s *Store) injected() error {
	if f := s.ws.fault.Load(); f != nil {
		return *f
	}
	return nil
}

// Writable reports whether the last write the database refused for want of
// space or for an I/O error is still the last word: nil, or an
// *store.UnwritableError. While it is, a probe write runs in the background
// at most every probeInterval.
func (s *Store) Writable() error {
	f := s.ws.failed.Load()
	if f == nil {
		return nil
	}
	now := time.Now().UnixNano()
	if now-s.ws.lastProbe.Load() >= int64(probeInterval) && s.ws.probing.CompareAndSwap(false, true) {
		s.ws.lastProbe.Store(now)
		go s.probeWrite()
	}
	return f
}

// probeWrite writes one row version (the latest schema_migrations row,
// unchanged) and records the outcome.
func (s *Store) probeWrite() {
	defer s.ws.probing.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.injected()
	if err == nil {
		_, err = s.pool.Exec(ctx, `UPDATE schema_migrations SET applied_at = applied_at
WHERE version = (SELECT max(version) FROM schema_migrations)`)
	}
	s.noteWrite(err)
}

// Interface guards
var _ store.WriteChecker = (*Store)(nil)
