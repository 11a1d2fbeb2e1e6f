package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

const asyncColumns = `id, account_id, key_id, request, doc, hold_price, hold_records, created_at, deadline, owner, lease_until, cancelled, resume, due_at`

func scanAsync(row pgx.Row) (store.AsyncRun, error) {
	var r store.AsyncRun
	var price int64
	var lease, due *time.Time
	err := row.Scan(&r.ID, &r.AccountID, &r.KeyID, &r.Request, &r.Doc, &price, &r.HoldRecords,
		&r.CreatedAt, &r.Deadline, &r.Owner, &lease, &r.Cancelled, &r.Resume, &due)
	if lease != nil {
		r.LeaseUntil = lease.UTC()
	}
	if due != nil {
		r.DueAt = due.UTC()
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.AsyncRun{}, store.ErrNotFound
	}
	r.HoldPrice = credits.Micros(price)
	r.CreatedAt, r.Deadline = r.CreatedAt.UTC(), r.Deadline.UTC()
	return r, err
}

// CountAsyncRuns counts an account's async runs in flight: its count row
// (asyncCountMigration), none if it never had one.
func (s *Store) CountAsyncRuns(ctx context.Context, accountID string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT runs FROM async_counts WHERE account_id = $1), 0)`, accountID).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting async runs: %w", err)
	}
	return n, nil
}

// ListAsyncRuns returns at most limit of an account's async runs in
// flight, newest first.
func (s *Store) ListAsyncRuns(ctx context.Context, accountID string, limit int) ([]store.AsyncRun, error) {
	if limit <= 0 {
		limit = math.MaxInt32
	}
	rows, err := s.pool.Query(ctx, `SELECT `+asyncColumns+` FROM async_runs WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, accountID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing async runs: %w", err)
	}
	out, err := collectAsync(rows)
	if err != nil {
		return nil, fmt.Errorf("listing async runs: %w", err)
	}
	return out, nil
}

// GetAsyncRun returns an account's async run in flight.
func (s *Store) GetAsyncRun(ctx context.Context, accountID, id string) (store.AsyncRun, error) {
	r, err := scanAsync(s.pool.QueryRow(ctx, `SELECT `+asyncColumns+` FROM async_runs WHERE id = $1 AND account_id = $2`, id, accountID))
	if err != nil {
		return store.AsyncRun{}, fmt.Errorf("reading async run %s: %w", id, err)
	}
	return r, nil
}

// ClaimAsyncRuns leases at most n unleased runs to owner, oldest first:
// runs whose lease lapsed, every run of a node whose heartbeat lapsed,
// and the parked runs of a node whose lock no session holds (it died,
// nodelock.go). Those nodes are read first from async_nodes, a row per
// node, so the claim finds their oldest runs by the index (owner,
// created_at) instead of testing every parked row (claimCandidatesSQL).
// FOR UPDATE SKIP LOCKED, so claims of several nodes at once pass each
// other's rows by instead of waiting or taking them twice; the row lock
// also decides between a claim and the owner's own unpark of a parked run
// (a claim rechecks due_at on the row it locks). A parked run claimed
// stays parked, under owner's heartbeat.
func (s *Store) ClaimAsyncRuns(ctx context.Context, owner string, n int, now, until time.Time) ([]store.AsyncRun, error) {
	var lapsed, unlocked []string
	rows, err := s.pool.Query(ctx, `SELECT n.node, n.live_until <= $1 FROM async_nodes n WHERE `+nodeDead, now)
	if err == nil {
		var node string
		var gone bool
		_, err = pgx.ForEachRow(rows, []any{&node, &gone}, func() error {
			if gone {
				lapsed = append(lapsed, node)
			} else {
				unlocked = append(unlocked, node)
			}
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("claiming async runs: reading dead nodes: %w", err)
	}
	rows, err = s.pool.Query(ctx, claimSQL, owner, n, now, settle.Time(until), lapsed, store.NodeLease, unlocked)
	if err != nil {
		return nil, fmt.Errorf("claiming async runs: %w", err)
	}
	out, err := collectAsync(rows)
	if err != nil {
		return nil, fmt.Errorf("claiming async runs: %w", err)
	}
	if len(out) > 0 {
		s.holdsRenewed.forget(owner)
	}
	if len(lapsed) > 0 && len(out) < n {
		// Every run of those nodes that was claimable is claimed: forget
		// the nodes that hold none.
		if _, err := s.pool.Exec(ctx, `
DELETE FROM async_nodes d WHERE d.node = ANY($1) AND d.live_until <= $2
	AND NOT EXISTS (SELECT 1 FROM async_runs a WHERE a.owner = d.node)`, lapsed, now); err != nil {
			return out, fmt.Errorf("claiming async runs: forgetting dead nodes: %w", err)
		}
	}
	return out, nil
}

// claimSQL leases to $1 at most $2 runs claimable at $3, oldest first,
// among the candidates (claimCandidatesSQL), each checked on the row it
// locks: a run not parked until $4, a parked run until $6 (the node's
// lease). $5 are the nodes whose heartbeat lapsed, $7 those whose lock
// no session holds. The runs are found by their ids (= ANY of an array),
// by the primary key: the planner, reckoning candidates by the thousand
// (LIMIT $2), joined them to a read of the whole table instead.
const claimSQL = `
UPDATE async_runs a SET owner = $1, lease_until = CASE WHEN a.due_at IS NULL THEN $4::timestamptz ELSE $6::timestamptz END
WHERE a.id = ANY(ARRAY(SELECT r.id FROM async_runs r WHERE r.id = ANY(ARRAY(` + claimCandidatesSQL + `))
	AND (r.lease_until IS NULL OR r.lease_until <= $3 OR r.owner = ANY($5) OR (r.owner = ANY($7) AND r.due_at IS NOT NULL))
	ORDER BY r.created_at LIMIT $2 FOR UPDATE SKIP LOCKED))
RETURNING a.id, a.account_id, a.key_id, a.request, a.doc, a.hold_price, a.hold_records, a.created_at, a.deadline, a.owner,
	a.lease_until, a.cancelled, a.resume, a.due_at`

// claimCandidatesSQL are the runs a claim chooses from, each read by an
// index: the $2 oldest runs queued (no lease: asyncOwnerMigration's
// partial index), every run whose lease lapsed (few: left by a worker
// that stopped renewing) by the lease index, the $2 oldest runs of each
// lapsed node $5 and the $2 oldest parked runs of each node $7 whose lock
// is gone by the index (owner, created_at). The $2 oldest claimable runs
// are among them; the claim checks each on the row it locks. A single
// query over the creation index with the conditions ORed tested every run
// in flight, and a takeover in batches of $2 tested again the runs the
// batches before had taken.
//
// Each read is ordered by its index and limited by a sub-select, which
// the planner cannot read: it then plans for the first rows, a scan of
// that index, stopped by the limit or by the index's bounds. A limit it
// knows, on a table without statistics (a new schema, or autovacuum off,
// as on the test server), made it guess an owner holds 0.5 % of the rows,
// read all the dead node's runs by a bitmap and sort them, for each batch;
// a lease condition it guesses a third of the rows made it read the whole
// table. The lapsed leases are read with no limit (NULL: all of them), so
// the oldest of them are among the candidates however many there are.
// Each read locks its rows (FOR UPDATE SKIP LOCKED) so that its limit
// counts runs this claim can take: a run another claim holds or took
// meanwhile is passed by and the read goes on to the next, as the single
// query's scan did; limited to the first $2 alone, concurrent claims
// could each find only the others' runs and leave a run unclaimed
// (async_claim_concurrent: 39 of 40, once).
const claimCandidatesSQL = `
	SELECT q.id FROM (SELECT l.id FROM async_runs l WHERE l.lease_until IS NULL
		ORDER BY l.created_at LIMIT (SELECT $2::int) FOR UPDATE SKIP LOCKED) q
	UNION ALL
	SELECT q.id FROM (SELECT l.id FROM async_runs l WHERE l.lease_until <= $3
		ORDER BY l.lease_until LIMIT (SELECT NULL::int) FOR UPDATE SKIP LOCKED) q
	UNION ALL
	SELECT x.id FROM unnest($5::text[]) AS o(owner), LATERAL (
		SELECT d.id FROM async_runs d WHERE d.owner = o.owner
		ORDER BY d.created_at LIMIT (SELECT $2::int) FOR UPDATE SKIP LOCKED) x
	UNION ALL
	SELECT x.id FROM unnest($7::text[]) AS o(owner), LATERAL (
		SELECT d.id FROM async_runs d WHERE d.owner = o.owner AND d.due_at IS NOT NULL
		ORDER BY d.created_at LIMIT (SELECT $2::int) FOR UPDATE SKIP LOCKED) x`

// nodeDead is true of a node row n dead at $1: its heartbeat lapsed, or
// it names a lock (lock_key) no session of this database holds. A bigint
// advisory lock shows in pg_locks as its high half (classid) and low
// half (objid), objsubid 1.
const nodeDead = `(n.live_until <= $1 OR (n.lock_key IS NOT NULL AND NOT EXISTS (
	SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND (l.classid::int8 << 32) | l.objid::int8 = n.lock_key)))`

// collectAsync reads the runs rows returns, and closes rows.
func collectAsync(rows pgx.Rows) ([]store.AsyncRun, error) {
	defer rows.Close()
	var out []store.AsyncRun
	for rows.Next() {
		r, err := scanAsync(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// RenewAsyncRuns extends owner's leases of ids, and the holds of those
// runs: a hold lapses after the hold timeout (15 minutes), an async run
// lasts up to its deadline (an hour by default).
func (s *Store) RenewAsyncRuns(ctx context.Context, owner string, ids []string, until time.Time) (held, cancelled []string, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		held, cancelled = held[:0], cancelled[:0]
		rows, err := tx.Query(ctx, `
UPDATE async_runs SET lease_until = $3 WHERE owner = $1 AND id = ANY($2) RETURNING id, cancelled`,
			owner, ids, settle.Time(until))
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var c bool
			if err := rows.Scan(&id, &c); err != nil {
				rows.Close()
				return err
			}
			held = append(held, id)
			if c {
				cancelled = append(cancelled, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
UPDATE holds SET expires_at = now() + make_interval(secs => $2)
WHERE id = ANY($1) AND expires_at > now() AND expires_at < now() + make_interval(secs => $2)`,
			held, s.holdTimeout.Seconds())
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("renewing async runs: %w", err)
	}
	return held, cancelled, nil
}

// UnparkAsyncRun gives a parked run back to a goroutine of owner.
func (s *Store) UnparkAsyncRun(ctx context.Context, owner, id string, until time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE async_runs SET due_at = NULL, lease_until = $3 WHERE id = $1 AND owner = $2`,
		id, owner, settle.Time(until))
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("unparking async run %s: %w", id, err)
	}
	return nil
}

// DueAsyncRuns returns owner's parked runs due at now (a cancel makes a
// parked run due at once), by the index (owner, due_at).
func (s *Store) DueAsyncRuns(ctx context.Context, owner string, now time.Time, n int) ([]store.AsyncRun, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+asyncColumns+` FROM async_runs
WHERE owner = $1 AND due_at <= $2 ORDER BY due_at LIMIT $3`, owner, now, n)
	if err != nil {
		return nil, fmt.Errorf("reading due async runs: %w", err)
	}
	out, err := collectAsync(rows)
	if err != nil {
		return nil, fmt.Errorf("reading due async runs: %w", err)
	}
	return out, nil
}

// DelayAsyncRuns sets the due times of owner's parked runs, in one
// statement.
func (s *Store) DelayAsyncRuns(ctx context.Context, owner string, ids []string, due []time.Time) error {
	if len(ids) != len(due) {
		return fmt.Errorf("delaying async runs: %d ids, %d times", len(ids), len(due))
	}
	if len(ids) == 0 {
		return nil
	}
	ts := make([]time.Time, len(due))
	for i, t := range due {
		ts[i] = settle.Time(t)
	}
	if _, err := s.pool.Exec(ctx, `
UPDATE async_runs a SET due_at = d.due FROM unnest($2::text[], $3::timestamptz[]) AS d(id, due)
WHERE a.id = d.id AND a.owner = $1 AND a.due_at IS NOT NULL`, owner, ids, ts); err != nil {
		return fmt.Errorf("delaying async runs: %w", err)
	}
	return nil
}

// WakeAsyncRun makes a parked run due at now.
func (s *Store) WakeAsyncRun(ctx context.Context, id string, now time.Time) (owner string, parked bool, err error) {
	err = s.pool.QueryRow(ctx, `
UPDATE async_runs SET due_at = CASE WHEN due_at IS NULL THEN NULL ELSE LEAST(due_at, $2) END WHERE id = $1 RETURNING owner, due_at IS NOT NULL`,
		id, settle.Time(now)).Scan(&owner, &parked)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return "", false, fmt.Errorf("waking async run %s: %w", id, err)
	}
	return owner, parked, nil
}

// HeartbeatNode records that node lives until until, and renews the
// holds of its runs that are past half their life: a hold lapses after
// the hold timeout (15 minutes), a parked run lasts up to its deadline
// (an hour by default), and each hold is renewed about once per half
// timeout, not at every beat. Finding those holds reads all the node's
// runs and all the holds (no index serves expires_at: reserveLeanMigration),
// a second or two at 100,000 parked runs, so only one beat per quarter
// timeout looks (holdRenewals), not every one (every 10 s). A hold then
// always has a quarter timeout left at the next look. A live beat also
// holds node's lock (taken at its first beat, checked at every one, taken
// again if its session ended: nodelock.go), whose key it records; the
// last beat (until not after now) releases it, after recording the node
// dead. A node whose lock cannot be taken beats without it, known dead
// only once its beat lapses; the beat is written, the error returned.
func (s *Store) HeartbeatNode(ctx context.Context, node string, now, until time.Time) error {
	renew := s.holdsRenewed.due(node, now, s.holdTimeout/4)
	var key *int64
	var lockErr error
	if until.After(now) {
		k, relocked, err := s.holdNode(ctx, node)
		switch {
		case err != nil:
			lockErr = fmt.Errorf("heartbeat of node %s, written without its lock (the node is known dead only once it lapses): %w", node, err)
		case relocked:
			key = &k
			lockErr = fmt.Errorf("heartbeat of node %s: the session of its lock had ended, so other nodes may have taken its parked runs over; locked again", node)
		default:
			key = &k
		}
	} else {
		defer s.releaseNode(node)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
INSERT INTO async_nodes (node, heartbeat_at, live_until, lock_key) VALUES ($1, $2, $3, $4)
ON CONFLICT (node) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, live_until = EXCLUDED.live_until, lock_key = EXCLUDED.lock_key`,
			node, settle.Time(now), settle.Time(until), key); err != nil {
			return err
		}
		if !renew {
			return nil
		}
		_, err := tx.Exec(ctx, `
UPDATE holds h SET expires_at = now() + make_interval(secs => $2)
FROM async_runs a
WHERE a.owner = $1 AND h.id = a.id AND h.expires_at > now() AND h.expires_at < now() + make_interval(secs => $2 / 2)`,
			node, s.holdTimeout.Seconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("heartbeat of node %s: %w", node, err)
	}
	if renew {
		s.holdsRenewed.set(node, now)
	}
	return lockErr
}

// holdRenewals is when each node of this process last renewed its runs'
// holds. A claim forgets its node's (the runs it took had their holds
// renewed by a node that died up to a quarter timeout before), so the
// next beat renews at once.
type holdRenewals struct {
	mu sync.Mutex
	at map[string]time.Time
}

// due reports whether node's holds were last renewed at least every
// before now, or never.
func (h *holdRenewals) due(node string, now time.Time, every time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.at[node]
	return !ok || now.Sub(at) >= every
}

func (h *holdRenewals) set(node string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[string]time.Time{}
	}
	h.at[node] = at
}

func (h *holdRenewals) forget(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.at, node)
}

// CancelAsyncRun marks an account's run cancelled.
func (s *Store) CancelAsyncRun(ctx context.Context, accountID, id string) (store.AsyncRun, error) {
	r, err := scanAsync(s.pool.QueryRow(ctx, `
UPDATE async_runs SET cancelled = true, due_at = CASE WHEN due_at IS NULL THEN NULL ELSE LEAST(due_at, created_at) END
WHERE id = $1 AND account_id = $2 RETURNING `+asyncColumns, id, accountID))
	if err != nil {
		return store.AsyncRun{}, fmt.Errorf("cancelling async run %s: %w", id, err)
	}
	return r, nil
}

const idemColumns = `fingerprint, run_id, async, status, created_at, expires_at, locked_until`

func scanIdem(row pgx.Row, k *store.IdempotencyKey) error {
	var fp []byte
	if err := row.Scan(&fp, &k.RunID, &k.Async, &k.Status, &k.CreatedAt, &k.ExpiresAt, &k.LockedUntil); err != nil {
		return err
	}
	copy(k.Fingerprint[:], fp)
	k.CreatedAt, k.ExpiresAt, k.LockedUntil = k.CreatedAt.UTC(), k.ExpiresAt.UTC(), k.LockedUntil.UTC()
	return nil
}

// PutIdempotencyKey stores k unless the account has a live record of it:
// one upsert whose update applies only to a dead record (expired, or
// running with its lock lapsed). Concurrent puts of one key wait on its
// row, so one creates it and the others find it. It also deletes keys
// expired for an hour, which keeps the table the size of a day of keys.
func (s *Store) PutIdempotencyKey(ctx context.Context, k store.IdempotencyKey) (store.IdempotencyKey, bool, error) {
	for range 5 {
		out := store.IdempotencyKey{AccountID: k.AccountID, Key: k.Key}
		err := scanIdem(s.pool.QueryRow(ctx, `
INSERT INTO idempotency_keys AS i (account_id, key, fingerprint, run_id, async, status, created_at, expires_at, locked_until)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, run_id = EXCLUDED.run_id,
	async = EXCLUDED.async, status = EXCLUDED.status, created_at = EXCLUDED.created_at,
	expires_at = EXCLUDED.expires_at, locked_until = EXCLUDED.locked_until
WHERE i.expires_at <= EXCLUDED.created_at OR (i.status = 0 AND i.locked_until <= EXCLUDED.created_at)
RETURNING `+idemColumns,
			k.AccountID, k.Key, k.Fingerprint[:], k.RunID, k.Async, k.Status,
			settle.Time(k.CreatedAt), settle.Time(k.ExpiresAt), settle.Time(k.LockedUntil)), &out)
		if err == nil {
			if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE expires_at < $1`, settle.Time(k.CreatedAt).Add(-time.Hour)); err != nil {
				return store.IdempotencyKey{}, false, fmt.Errorf("deleting expired idempotency keys: %w", err)
			}
			return out, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.IdempotencyKey{}, false, fmt.Errorf("storing idempotency key: %w", err)
		}
		err = scanIdem(s.pool.QueryRow(ctx, `SELECT `+idemColumns+` FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
			k.AccountID, k.Key), &out)
		if err == nil {
			return out, false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.IdempotencyKey{}, false, fmt.Errorf("reading idempotency key: %w", err)
		}
		// Dropped between the two statements: put again.
	}
	return store.IdempotencyKey{}, false, errors.New("storing idempotency key: it keeps changing under the put")
}

// FinishIdempotencyKey records the status a call of runID answered.
func (s *Store) FinishIdempotencyKey(ctx context.Context, accountID, key, runID string, status int) error {
	if _, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET status = $4 WHERE account_id = $1 AND key = $2 AND run_id = $3`,
		accountID, key, runID, status); err != nil {
		return fmt.Errorf("finishing idempotency key: %w", err)
	}
	return nil
}

// DropIdempotencyKey forgets the key if it still belongs to runID.
func (s *Store) DropIdempotencyKey(ctx context.Context, accountID, key, runID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND run_id = $3`,
		accountID, key, runID); err != nil {
		return fmt.Errorf("dropping idempotency key: %w", err)
	}
	return nil
}
