package store

import (
	"context"
	"errors"
	"time"

	"socialrouter/caddymodule/credits"
)

// AsyncRun is an asynchronous run in flight, stored from its 202 until its
// Settle: what a worker needs to run it again (Request), what GET
// /v1/extractions/{id} shows meanwhile (Doc), the hold to take again when
// a worker resumes it after a crash (HoldPrice × HoldRecords), and which
// worker runs it until when (Owner, LeaseUntil). A worker that stops
// renewing its lease (its node died) loses the run to the next claim.
type AsyncRun struct {
	ID        string
	AccountID string
	KeyID     string
	// Request is the call as the API stored it (JSON), opaque to the store.
	Request []byte
	// Doc is the run document as it stands (status running, the attempts
	// so far), opaque to the store.
	Doc []byte
	// HoldPrice and HoldRecords are the run's hold: re-reserved on resume,
	// since a hold does not outlive a crash.
	HoldPrice   credits.Micros
	HoldRecords int
	// Resume is the runner's record of the paid upstream work the run
	// started (its handles, with what rebuilds each call), so the worker
	// that takes the run over waits for that work instead of starting it
	// again; opaque to the store, written with Doc by UpdateAsyncRun (a new
	// run has none).
	Resume    []byte
	CreatedAt time.Time
	// Deadline ends the run (failed) whoever runs it.
	Deadline time.Time
	// Owner is the worker holding the lease until LeaseUntil; "" and a
	// zero LeaseUntil: no worker took it yet.
	Owner      string
	LeaseUntil time.Time
	// Cancelled is set by CancelAsyncRun: the owner stops the work at its
	// next renewal (a parked run: its next sweep, made due at once).
	Cancelled bool
	// DueAt, set, says the run is parked: every upstream work it started
	// is recorded (Resume) and left running, no goroutine waits for it,
	// and its owner's poller checks that work at DueAt. A parked run's
	// lease is its owner node's heartbeat (HeartbeatNode; LeaseUntil is
	// NodeLease): it is taken over once that heartbeat lapses. Zero: a
	// worker's goroutine runs the run, under LeaseUntil.
	DueAt time.Time
}

// NodeLease is the LeaseUntil of a parked run: no per-run lease, the
// owner node's heartbeat holds it (HeartbeatNode).
var NodeLease = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// IdempotencyKey is an Idempotency-Key a call was made with, scoped to the
// account: the fingerprint of the request it came with, the run it
// started and, once that call answered, its HTTP status. Until then a
// call holds the key until LockedUntil, so a key whose node died mid-call
// is not blocked for its whole life.
type IdempotencyKey struct {
	AccountID   string
	Key         string
	Fingerprint [32]byte
	RunID       string
	// Async says the run is asynchronous: its state is the AsyncRun, then
	// the settled run.
	Async bool
	// Status is the HTTP status the call answered; 0 while it runs.
	Status      int
	CreatedAt   time.Time
	ExpiresAt   time.Time
	LockedUntil time.Time
}

// ErrAsyncLimit is the answer to an async run that would take its
// account past the runs it may have in flight at once.
var ErrAsyncLimit = errors.New("the account has its most async runs in flight")

// ErrLeaseLost is the answer to a worker that writes to a run it no
// longer holds the lease of: another worker took it over.
var ErrLeaseLost = errors.New("the lease of the async run is held by another worker")

// Async is the persistence of asynchronous runs in flight.
// Times are compared with the caller's now, so every node must keep its
// clock in step (as the holds already require).
type Async interface {
	// CreateAsyncRun stores a new async run; ErrExists if its id is taken.
	// With maxInFlight > 0, ErrAsyncLimit if the account already has that
	// many runs in flight: counted atomically with the insert, so
	// concurrent creates never take an account past it.
	CreateAsyncRun(ctx context.Context, r AsyncRun, maxInFlight int) error
	// CountAsyncRuns counts an account's async runs in flight.
	CountAsyncRuns(ctx context.Context, accountID string) (int, error)
	// ListAsyncRuns returns at most limit of an account's async runs in
	// flight, newest first.
	ListAsyncRuns(ctx context.Context, accountID string, limit int) ([]AsyncRun, error)
	// GetAsyncRun returns an account's async run in flight; ErrNotFound
	// for an unknown id, another account's, or one already settled and
	// deleted.
	GetAsyncRun(ctx context.Context, accountID, id string) (AsyncRun, error)
	// ClaimAsyncRuns gives owner the lease, until until, of at most n runs
	// no live lease holds at now (oldest first), and returns them: runs
	// whose lease lapsed, and parked runs whose owner node's heartbeat
	// lapsed, or that the store knows dead before (PostgreSQL: the
	// session holding its lock ended); those stay parked, with their
	// DueAt, under owner's heartbeat. Two concurrent claims never take
	// the same run, nor a claim a parked run its owner unparks.
	ClaimAsyncRuns(ctx context.Context, owner string, n int, now, until time.Time) ([]AsyncRun, error)
	// RenewAsyncRuns extends owner's leases of ids to until (and keeps
	// their holds alive where holds expire). It returns the ids owner
	// still holds and, among them, those cancelled; an id not returned
	// was lost to another worker or deleted.
	RenewAsyncRuns(ctx context.Context, owner string, ids []string, until time.Time) (held, cancelled []string, err error)
	// UpdateAsyncRun writes the run's document, hold and resume record as
	// they stand, and with r.DueAt set parks the run in the same write
	// (see AsyncRun.DueAt); ErrLeaseLost if owner does not hold it.
	UpdateAsyncRun(ctx context.Context, owner string, r AsyncRun) error
	// UnparkAsyncRun gives owner's parked run id back to a goroutine of
	// owner, leased until until (its work is done: the run is read and
	// settled); ErrLeaseLost if owner does not hold it.
	UnparkAsyncRun(ctx context.Context, owner, id string, until time.Time) error
	// DueAsyncRuns returns at most n of owner's parked runs due at now,
	// or cancelled, earliest due first.
	DueAsyncRuns(ctx context.Context, owner string, now time.Time, n int) ([]AsyncRun, error)
	// DelayAsyncRuns sets the due time of owner's parked runs ids[i] to
	// due[i]; an id no longer owner's, or not parked, is skipped.
	DelayAsyncRuns(ctx context.Context, owner string, ids []string, due []time.Time) error
	// WakeAsyncRun makes run id due at now if it is parked (its upstream
	// called back) and returns its owner and whether it was parked; a run
	// a goroutine runs is left as it is. ErrNotFound for an unknown id.
	WakeAsyncRun(ctx context.Context, id string, now time.Time) (owner string, parked bool, err error)
	// HeartbeatNode records that node lives until until, and keeps the
	// holds of its runs alive where holds expire: the one renewal of a
	// node's parked runs. Another node claims them once it lapsed. A beat
	// with until not after now ends the node (its runs are claimed at
	// once) and frees what the store held for it (PostgreSQL: its lock).
	HeartbeatNode(ctx context.Context, node string, now, until time.Time) error
	// CancelAsyncRun marks an account's run cancelled (a parked one due
	// at once) and returns it; ErrNotFound as GetAsyncRun.
	CancelAsyncRun(ctx context.Context, accountID, id string) (AsyncRun, error)
	// DeleteAsyncRun removes a run once settled; deleting an absent one is
	// not an error.
	DeleteAsyncRun(ctx context.Context, id string) error
}

// Idempotency is the persistence of idempotency keys, which sync and
// async calls alike carry.
type Idempotency interface {
	// PutIdempotencyKey stores k if the account has no live record of
	// k.Key (none, expired at k.CreatedAt, or a running one whose lock
	// lapsed, which k replaces) and returns (k, true); otherwise it
	// returns the live record and false.
	PutIdempotencyKey(ctx context.Context, k IdempotencyKey) (IdempotencyKey, bool, error)
	// FinishIdempotencyKey records the status a call of runID answered;
	// nothing if the key now belongs to another run.
	FinishIdempotencyKey(ctx context.Context, accountID, key, runID string, status int) error
	// DropIdempotencyKey forgets the key if it still belongs to runID: a
	// call that stored no run (refused for money, store down) leaves the
	// key free for its retry.
	DropIdempotencyKey(ctx context.Context, accountID, key, runID string) error
}
