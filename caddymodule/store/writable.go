package store

import (
	"errors"
	"fmt"
)

// ErrUnwritable is returned (wrapped in an *UnwritableError) by
// WriteChecker.Writable while the store cannot write: a call is then
// refused before any upstream work, since a run whose settle cannot be
// stored is upstream spend nobody pays for.
var ErrUnwritable = errors.New("the store cannot write")

// Why a store cannot write (UnwritableError.Reason, the reason label of
// sdr_store_write_blocked and the reason of the 503).
const (
	// ReasonDiskFull: the store's filesystem has less free space than the
	// store keeps in reserve, or the database reported its disk full.
	ReasonDiskFull = "disk_full"
	// ReasonWriteFailed: a write failed (an I/O error) and no write has
	// succeeded since.
	ReasonWriteFailed = "write_failed"
)

// Reasons lists the reasons a store may be unwritable.
var Reasons = []string{ReasonDiskFull, ReasonWriteFailed}

// UnwritableError says why a store cannot write.
type UnwritableError struct {
	Reason string
	Err    error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("the store cannot write (%s): %v", e.Reason, e.Err)
}

// Is makes errors.Is(err, ErrUnwritable) true.
func (e *UnwritableError) Is(target error) bool { return target == ErrUnwritable }

func (e *UnwritableError) Unwrap() error { return e.Err }

// WriteChecker is a store that can tell cheaply, before a call does any
// upstream work, whether its writes can succeed now. It recovers by
// itself: once space returns or a write succeeds again, Writable is nil.
type WriteChecker interface {
	// Writable returns nil, or an *UnwritableError.
	Writable() error
}
