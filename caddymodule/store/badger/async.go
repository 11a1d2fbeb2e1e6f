package badger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// asyncState serializes the claims, renewals and cancels of async runs
// and the writes of idempotency keys (one process: a mutex instead of
// optimistic conflicts on every claim), and knows the workers that
// claimed in this process. Creating, updating and deleting one run take
// no mutex: they touch one key, so badger groups their commits into one
// fsync, and a conflict with a claim or renewal of the same run is
// retried by update. A badger directory
// is opened by one process, so a lease whose owner never claimed here was
// taken by a process that is gone: it is lapsed whatever its time says,
// and a restarted gateway resumes its runs at once.
type asyncState struct {
	mu     sync.Mutex
	owners sync.Map // owner → struct{}
	flight flightIndex
	leases leaseIndex // asyncindex.go
}

func asyncKey(id string) []byte { return join(pAsync, id) }
func idemKey(account, key string) []byte {
	return join(pIdem, account, key)
}

// asyncRecord is an AsyncRun as stored.
type asyncRecord struct {
	AccountID   string         `json:"account_id"`
	KeyID       string         `json:"key_id,omitempty"`
	Request     []byte         `json:"request"`
	Doc         []byte         `json:"doc"`
	HoldPrice   credits.Micros `json:"hold_price"`
	HoldRecords int            `json:"hold_records"`
	Resume      []byte         `json:"resume,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
	Deadline    time.Time      `json:"deadline"`
	Owner       string         `json:"owner,omitempty"`
	LeaseUntil  time.Time      `json:"lease_until"`
	Cancelled   bool           `json:"cancelled,omitempty"`
	DueAt       time.Time      `json:"due_at,omitzero"`
}

func (r asyncRecord) run(id string) store.AsyncRun {
	return store.AsyncRun{ID: id, AccountID: r.AccountID, KeyID: r.KeyID, Request: r.Request, Doc: r.Doc,
		HoldPrice: r.HoldPrice, HoldRecords: r.HoldRecords, Resume: r.Resume, CreatedAt: r.CreatedAt.UTC(), Deadline: r.Deadline.UTC(),
		Owner: r.Owner, LeaseUntil: r.LeaseUntil.UTC(), Cancelled: r.Cancelled, DueAt: utcOrZero(r.DueAt)}
}

// utcOrZero is t in UTC, the zero time left zero.
func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func recordOf(r store.AsyncRun) asyncRecord {
	return asyncRecord{AccountID: r.AccountID, KeyID: r.KeyID, Request: r.Request, Doc: r.Doc,
		HoldPrice: r.HoldPrice, HoldRecords: r.HoldRecords, Resume: r.Resume, CreatedAt: settle.Time(r.CreatedAt), Deadline: settle.Time(r.Deadline),
		Owner: r.Owner, LeaseUntil: settle.Time(r.LeaseUntil), Cancelled: r.Cancelled, DueAt: settle.Time(r.DueAt)}
}

func readAsync(txn *bdb.Txn, id string) (asyncRecord, error) {
	v, err := get(txn, asyncKey(id))
	if err != nil {
		return asyncRecord{}, err
	}
	var r asyncRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return asyncRecord{}, fmt.Errorf("decoding async run %s: %v", id, err)
	}
	return r, nil
}

func writeAsync(txn *bdb.Txn, id string, r asyncRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return txn.Set(asyncKey(id), v)
}

// asyncUpdate runs fn in a read-write transaction under the async mutex.
func (s *Store) asyncUpdate(ctx context.Context, fn func(txn *bdb.Txn) error) error {
	s.async.mu.Lock()
	defer s.async.mu.Unlock()
	return s.update(ctx, fn)
}

// CreateAsyncRun stores a new async run; ErrExists if its id is taken,
// ErrAsyncLimit if the account has maxInFlight runs already (its place
// is reserved in the in-memory index before the transaction, and given
// back if the transaction fails).
func (s *Store) CreateAsyncRun(ctx context.Context, r store.AsyncRun, maxInFlight int) error {
	if !settle.ValidID(r.ID) || !settle.ValidID(r.AccountID) {
		return fmt.Errorf("storing async run %q: invalid id", r.ID)
	}
	if err := s.async.flight.reserve(r.AccountID, r.ID, maxInFlight); err != nil {
		return fmt.Errorf("storing async run %s: %w", r.ID, err)
	}
	err := s.update(ctx, func(txn *bdb.Txn) error {
		if ok, err := exists(txn, asyncKey(r.ID)); err != nil || ok {
			if err == nil {
				err = store.ErrExists
			}
			return err
		}
		return writeAsync(txn, r.ID, recordOf(r))
	})
	if err != nil {
		s.async.flight.remove(r.ID)
		return fmt.Errorf("storing async run %s: %w", r.ID, err)
	}
	s.async.leases.set(r.ID, recordOf(r))
	return nil
}

// GetAsyncRun returns an account's async run in flight.
func (s *Store) GetAsyncRun(ctx context.Context, accountID, id string) (store.AsyncRun, error) {
	if err := ctx.Err(); err != nil {
		return store.AsyncRun{}, err
	}
	var r asyncRecord
	err := s.db.View(func(txn *bdb.Txn) (err error) {
		r, err = readAsync(txn, id)
		return err
	})
	if err == nil && r.AccountID != accountID {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.AsyncRun{}, fmt.Errorf("reading async run %s: %w", id, err)
	}
	return r.run(id), nil
}

// asyncBatch bounds the runs one transaction claims or renews: badger
// refuses a transaction larger than a fraction of its memtable
// (ErrTxnTooBig); one claim of 2,000 runs in one transaction failed.
const asyncBatch = 256

// ClaimAsyncRuns leases at most n unleased runs to owner, oldest first:
// the lease index (asyncindex.go) finds them, then transactions of
// asyncBatch runs take them, each checking again that no lease holds
// the run. A parked run claimed stays parked, under owner's heartbeat.
func (s *Store) ClaimAsyncRuns(ctx context.Context, owner string, n int, now, until time.Time) ([]store.AsyncRun, error) {
	s.async.owners.Store(owner, struct{}{})
	s.async.mu.Lock()
	defer s.async.mu.Unlock()
	cands := s.async.leases.claimable(s, now, n)
	var out []store.AsyncRun
	for len(cands) > 0 {
		chunk := cands[:min(len(cands), asyncBatch)]
		cands = cands[len(chunk):]
		var got []store.AsyncRun
		var recs []asyncRecord
		err := s.update(ctx, func(txn *bdb.Txn) error {
			got, recs = got[:0], recs[:0]
			for _, id := range chunk {
				r, err := readAsync(txn, id)
				if errors.Is(err, store.ErrNotFound) {
					continue // settled meanwhile
				}
				if err != nil {
					return err
				}
				if s.live(r, now) {
					continue
				}
				r.Owner, r.LeaseUntil = owner, settle.Time(until)
				if !r.DueAt.IsZero() {
					r.LeaseUntil = store.NodeLease
				}
				if err := writeAsync(txn, id, r); err != nil {
					return err
				}
				got, recs = append(got, r.run(id)), append(recs, r)
			}
			return nil
		})
		if err != nil {
			if len(out) > 0 {
				return out, nil // what was claimed is the caller's to run
			}
			return nil, fmt.Errorf("claiming async runs: %w", err)
		}
		for i, r := range recs {
			s.async.leases.set(got[i].ID, r)
		}
		out = append(out, got...)
	}
	return out, nil
}

// RenewAsyncRuns extends owner's leases of ids, asyncBatch runs a
// transaction.
func (s *Store) RenewAsyncRuns(ctx context.Context, owner string, ids []string, until time.Time) (held, cancelled []string, err error) {
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), asyncBatch)]
		ids = ids[len(chunk):]
		h, c, err := s.renewBatch(ctx, owner, chunk, until)
		if err != nil {
			return nil, nil, err
		}
		held, cancelled = append(held, h...), append(cancelled, c...)
	}
	return held, cancelled, nil
}

func (s *Store) renewBatch(ctx context.Context, owner string, ids []string, until time.Time) (held, cancelled []string, err error) {
	var renewed []asyncRecord
	err = s.asyncUpdate(ctx, func(txn *bdb.Txn) error {
		held, cancelled, renewed = held[:0], cancelled[:0], renewed[:0]
		for _, id := range ids {
			r, err := readAsync(txn, id)
			if errors.Is(err, store.ErrNotFound) || err == nil && r.Owner != owner {
				continue
			}
			if err != nil {
				return err
			}
			if r.DueAt.IsZero() {
				r.LeaseUntil = settle.Time(until)
			}
			if err := writeAsync(txn, id, r); err != nil {
				return err
			}
			renewed = append(renewed, r)
			held = append(held, id)
			if r.Cancelled {
				cancelled = append(cancelled, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("renewing async runs: %w", err)
	}
	for i, r := range renewed {
		s.async.leases.set(held[i], r)
	}
	return held, cancelled, nil
}

// UpdateAsyncRun writes the run's document, hold and resume record, and
// parks the run when up.DueAt is set.
func (s *Store) UpdateAsyncRun(ctx context.Context, owner string, up store.AsyncRun) error {
	err := s.changeAsync(ctx, owner, up.ID, func(r *asyncRecord) bool {
		r.Doc, r.HoldPrice, r.HoldRecords, r.Resume = up.Doc, up.HoldPrice, up.HoldRecords, up.Resume
		if !up.DueAt.IsZero() {
			r.DueAt, r.LeaseUntil = settle.Time(up.DueAt), store.NodeLease
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("updating async run %s: %w", up.ID, err)
	}
	return nil
}

// CancelAsyncRun marks an account's run cancelled.
func (s *Store) CancelAsyncRun(ctx context.Context, accountID, id string) (store.AsyncRun, error) {
	var out store.AsyncRun
	var rec asyncRecord
	err := s.asyncUpdate(ctx, func(txn *bdb.Txn) error {
		r, err := readAsync(txn, id)
		if err == nil && r.AccountID != accountID {
			err = store.ErrNotFound
		}
		if err != nil {
			return err
		}
		r.Cancelled = true
		if !r.DueAt.IsZero() && r.DueAt.After(r.CreatedAt) {
			r.DueAt = r.CreatedAt // due at once: its owner's sweep settles it
		}
		out, rec = r.run(id), r
		return writeAsync(txn, id, r)
	})
	if err != nil {
		return store.AsyncRun{}, fmt.Errorf("cancelling async run %s: %w", id, err)
	}
	s.async.leases.set(id, rec)
	return out, nil
}

// DeleteAsyncRun removes a settled run.
func (s *Store) DeleteAsyncRun(ctx context.Context, id string) error {
	err := s.update(ctx, func(txn *bdb.Txn) error { return txn.Delete(asyncKey(id)) })
	if err != nil {
		return fmt.Errorf("deleting async run %s: %w", id, err)
	}
	s.async.flight.remove(id)
	s.async.leases.remove(id)
	return nil
}

// idemRecord is an IdempotencyKey as stored.
type idemRecord struct {
	Fingerprint [32]byte  `json:"fingerprint"`
	RunID       string    `json:"run_id"`
	Async       bool      `json:"async,omitempty"`
	Status      int       `json:"status,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	LockedUntil time.Time `json:"locked_until"`
}

func (r idemRecord) key(account, key string) store.IdempotencyKey {
	return store.IdempotencyKey{AccountID: account, Key: key, Fingerprint: r.Fingerprint, RunID: r.RunID, Async: r.Async,
		Status: r.Status, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), LockedUntil: r.LockedUntil.UTC()}
}

func readIdem(txn *bdb.Txn, account, key string) (idemRecord, error) {
	v, err := get(txn, idemKey(account, key))
	if err != nil {
		return idemRecord{}, err
	}
	var r idemRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return idemRecord{}, fmt.Errorf("decoding idempotency key: %v", err)
	}
	return r, nil
}

// writeIdem stores a record with badger's TTL a minute past its expiry.
func writeIdem(txn *bdb.Txn, account, key string, r idemRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	e := bdb.NewEntry(idemKey(account, key), v)
	if d := time.Until(r.ExpiresAt) + time.Minute; d > 0 {
		e = e.WithTTL(d)
	}
	return txn.SetEntry(e)
}

// PutIdempotencyKey stores k unless the account has a live record of it.
func (s *Store) PutIdempotencyKey(ctx context.Context, k store.IdempotencyKey) (store.IdempotencyKey, bool, error) {
	var out store.IdempotencyKey
	var created bool
	err := s.asyncUpdate(ctx, func(txn *bdb.Txn) error {
		r, err := readIdem(txn, k.AccountID, k.Key)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && k.CreatedAt.Before(r.ExpiresAt) && (r.Status != 0 || k.CreatedAt.Before(r.LockedUntil)) {
			out, created = r.key(k.AccountID, k.Key), false
			return nil
		}
		n := idemRecord{Fingerprint: k.Fingerprint, RunID: k.RunID, Async: k.Async, Status: k.Status,
			CreatedAt: settle.Time(k.CreatedAt), ExpiresAt: settle.Time(k.ExpiresAt), LockedUntil: settle.Time(k.LockedUntil)}
		out, created = n.key(k.AccountID, k.Key), true
		return writeIdem(txn, k.AccountID, k.Key, n)
	})
	if err != nil {
		return store.IdempotencyKey{}, false, fmt.Errorf("storing idempotency key: %w", err)
	}
	return out, created, nil
}

// FinishIdempotencyKey records the status a call of runID answered.
func (s *Store) FinishIdempotencyKey(ctx context.Context, accountID, key, runID string, status int) error {
	err := s.asyncUpdate(ctx, func(txn *bdb.Txn) error {
		r, err := readIdem(txn, accountID, key)
		if errors.Is(err, store.ErrNotFound) || err == nil && r.RunID != runID {
			return nil
		}
		if err != nil {
			return err
		}
		r.Status = status
		return writeIdem(txn, accountID, key, r)
	})
	if err != nil {
		return fmt.Errorf("finishing idempotency key: %w", err)
	}
	return nil
}

// DropIdempotencyKey forgets the key if it still belongs to runID.
func (s *Store) DropIdempotencyKey(ctx context.Context, accountID, key, runID string) error {
	err := s.asyncUpdate(ctx, func(txn *bdb.Txn) error {
		r, err := readIdem(txn, accountID, key)
		if errors.Is(err, store.ErrNotFound) || err == nil && r.RunID != runID {
			return nil
		}
		if err != nil {
			return err
		}
		return txn.Delete(idemKey(accountID, key))
	})
	if err != nil {
		return fmt.Errorf("dropping idempotency key: %w", err)
	}
	return nil
}

// restoreAsyncHolds holds again, as the store opens, the money of the
// async runs in flight (HoldPrice × HoldRecords each): holds live in
// memory and a restart drops them, but a run left by a crash is resumed
// and must find its money still set aside, not spent meanwhile by calls
// that came before its worker took the hold again. It indexes the runs by
// account too (flightIndex).
func (s *Store) restoreAsyncHolds() error {
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	return s.eachAsync(func(id string, r asyncRecord) {
		s.async.flight.restore(r.AccountID, id)
		s.async.leases.set(id, r)
		if amount := r.HoldPrice * credits.Micros(r.HoldRecords); amount > 0 {
			s.holds.set(id, heldMoney{account: r.AccountID, key: r.KeyID, amount: amount})
		}
	})
}

// eachAsync calls fn with every async run in flight, in a read-only
// transaction.
func (s *Store) eachAsync(fn func(id string, r asyncRecord)) error {
	return s.db.View(func(txn *bdb.Txn) error {
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: []byte{pAsync}, PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			var r asyncRecord
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
				return fmt.Errorf("decoding async run: %v", err)
			}
			fn(string(item.Key()[1:]), r)
		}
		return nil
	})
}
