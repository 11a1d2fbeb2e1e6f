package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// CreateAsyncRun stores a new async run; ErrExists if its id is taken,
// ErrAsyncLimit if the account has maxInFlight runs already (none with
// maxInFlight 0). The account's count of runs in flight is a row of
// async_counts (asyncCountMigration): the create locks it, checks the cap
// on it, inserts the run and adds it to the count in one transaction, so
// creates of one account on any node take turns on that row and none
// checks before another's insert is counted. Creates that arrive together
// on this node are grouped (line) into one transaction of one round trip,
// which admits each account's creates in queue order up to the cap: one
// WAL flush for the group, where one per create held the account's row
// through each.
func (s *Store) CreateAsyncRun(ctx context.Context, r store.AsyncRun, maxInFlight int) error {
	if !settle.ValidID(r.ID) || !settle.ValidID(r.AccountID) {
		return fmt.Errorf("storing async run %q: invalid id", r.ID)
	}
	w := &createWaiter{ctx: ctx, r: r, max: maxInFlight}
	s.creates.do(w, s.createGroup)
	if w.err != nil {
		return fmt.Errorf("storing async run %s: %w", r.ID, w.err)
	}
	return nil
}

// createWaiter is one CreateAsyncRun call in the line.
type createWaiter struct {
	ctx context.Context
	r   store.AsyncRun
	max int
	err error
}

// createGroup creates the runs of group in one transaction per cap (the
// callers pass the same cap unless the configuration changed), each id
// once: a second create of an id in the group runs after, alone, and
// finds it taken or free as consecutive creates would. A create refused
// at the cap in a group where a create of the same account found its id
// taken (which took a place it did not use) runs again alone, and so does
// every create of a group whose transaction failed, so that each fails
// with its own error.
func (s *Store) createGroup(group []*createWaiter) (together bool) {
	var again []*createWaiter
	seen := make(map[string]bool, len(group))
	byCap := map[int][]*createWaiter{}
	var caps []int
	for _, w := range group {
		if seen[w.r.ID] {
			again = append(again, w)
			continue
		}
		seen[w.r.ID] = true
		if _, ok := byCap[w.max]; !ok {
			caps = append(caps, w.max)
		}
		byCap[w.max] = append(byCap[w.max], w)
	}
	together = len(caps) == 1 && len(again) == 0
	for _, c := range caps {
		ws := byCap[c]
		retry, err := s.createTogether(ws, c)
		if err != nil {
			together = false
			again = append(again, ws...)
			continue
		}
		again = append(again, retry...)
	}
	for _, w := range again {
		if _, err := s.createTogether([]*createWaiter{w}, w.max); err != nil {
			w.err = err
		}
	}
	return together
}

// createTogether creates the runs of ws, of distinct ids, under the cap
// max, in ONE transaction of ONE round trip (batchTx): the count rows of
// their accounts made if missing, then createRunsSQL. It sets each
// waiter's outcome and returns the waiters refused at the cap that must
// run again (see createGroup); an error is the transaction's, and no
// waiter's outcome is set.
func (s *Store) createTogether(ws []*createWaiter, max int) (retry []*createWaiter, err error) {
	ctx := ws[0].ctx
	if len(ws) > 1 {
		var cancel context.CancelFunc
		ctx, cancel = groupContext()
		defer cancel()
	}
	var c createColumns
	for _, w := range ws {
		c.add(w.r)
	}
	accounts := slices.Clone(c.accounts)
	slices.Sort(accounts)
	accounts = slices.Compact(accounts)
	outcome := make([]int, len(ws)) // 0 refused at the cap, 1 created, 2 id taken
	if _, err := s.batchTx(ctx, func(b *pgx.Batch) {
		clear(outcome)
		b.Queue(countRowsSQL, accounts)
		b.Queue(createRunsSQL, accounts, c.ids, c.accounts, c.keys, c.requests, c.docs, c.prices, c.records,
			c.created, c.deadlines, c.owners, c.leases, c.cancelled, max).Query(func(rows pgx.Rows) error {
			var ord int
			var created bool
			_, err := pgx.ForEachRow(rows, []any{&ord, &created}, func() error {
				if ord < 1 || ord > len(ws) {
					return fmt.Errorf("creating async runs: row %d of %d", ord, len(ws))
				}
				outcome[ord-1] = 1
				if !created {
					outcome[ord-1] = 2
				}
				return nil
			})
			return err
		})
	}); err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	for i, w := range ws {
		if outcome[i] == 2 {
			taken[w.r.AccountID] = true
		}
	}
	for i, w := range ws {
		switch {
		case outcome[i] == 1:
			w.err = nil
		case outcome[i] == 2:
			w.err = store.ErrExists
		case taken[w.r.AccountID] && len(ws) > 1:
			retry = append(retry, w)
		default:
			w.err = store.ErrAsyncLimit
		}
	}
	return retry, nil
}

// createColumns are createRunsSQL's arrays, one entry per run.
type createColumns struct {
	ids, accounts, keys, owners []string
	requests, docs              [][]byte
	prices                      []int64
	records                     []int
	created, deadlines          []time.Time
	leases                      []*time.Time
	cancelled                   []bool
}

func (c *createColumns) add(r store.AsyncRun) {
	var lease *time.Time
	if !r.LeaseUntil.IsZero() {
		t := settle.Time(r.LeaseUntil)
		lease = &t
	}
	c.ids, c.accounts, c.keys, c.owners = append(c.ids, r.ID), append(c.accounts, r.AccountID), append(c.keys, r.KeyID), append(c.owners, r.Owner)
	c.requests, c.docs = append(c.requests, r.Request), append(c.docs, r.Doc)
	c.prices, c.records = append(c.prices, int64(r.HoldPrice)), append(c.records, r.HoldRecords)
	c.created, c.deadlines = append(c.created, settle.Time(r.CreatedAt)), append(c.deadlines, settle.Time(r.Deadline))
	c.leases, c.cancelled = append(c.leases, lease), append(c.cancelled, r.Cancelled)
}

const (
	// countRowsSQL makes the count rows of the accounts $1 (sorted) that
	// have none yet. Only those it does not see try the insert: the
	// conflict check of ON CONFLICT DO NOTHING waits for the transaction
	// that last updated the row, so every create of a hot account waited
	// here for the previous group's commit, before its own lock.
	countRowsSQL = `
INSERT INTO async_counts (account_id, runs)
SELECT a, 0 FROM unnest($1::text[]) AS a WHERE NOT EXISTS (SELECT 1 FROM async_counts c WHERE c.account_id = a) ORDER BY a
ON CONFLICT (account_id) DO NOTHING`
	// createRunsSQL locks the count rows of the accounts $1 in id order
	// (the order of every create and delete), admits each account's runs
	// in order while the count stays within the cap $14 (none when it is
	// 0 or less), inserts those, adds the runs inserted to the counts, and
	// returns, for each run admitted, its position in the arrays and
	// whether it was inserted (not: its id was taken). A run not returned
	// was refused at the cap. FOR UPDATE returns each row as the commit it
	// waited for left it, so the count is the latest one whatever the
	// statement's snapshot, and the UPDATE of a row this statement locked
	// updates that latest version too.
	createRunsSQL = `
WITH locked AS MATERIALIZED (
	SELECT account_id, runs FROM async_counts WHERE account_id = ANY($1::text[]) ORDER BY account_id FOR UPDATE),
want AS (
	SELECT w.*, row_number() OVER (PARTITION BY w.account_id ORDER BY w.ord) AS place
	FROM unnest($2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[], $7::bigint[], $8::int[],
		$9::timestamptz[], $10::timestamptz[], $11::text[], $12::timestamptz[], $13::bool[]) WITH ORDINALITY
		AS w(id, account_id, key_id, request, doc, hold_price, hold_records, created_at, deadline, owner, lease_until, cancelled, ord)),
admitted AS MATERIALIZED (
	SELECT w.* FROM want w JOIN locked l ON l.account_id = w.account_id WHERE $14::int <= 0 OR l.runs + w.place <= $14::int),
inserted AS (
	INSERT INTO async_runs (id, account_id, key_id, request, doc, hold_price, hold_records, created_at, deadline, owner, lease_until, cancelled)
	SELECT id, account_id, key_id, request, doc, hold_price, hold_records, created_at, deadline, owner, lease_until, cancelled
	FROM admitted ORDER BY ord
	ON CONFLICT (id) DO NOTHING
	RETURNING id, account_id),
counted AS (
	UPDATE async_counts c SET runs = c.runs + n.runs
	FROM (SELECT account_id, count(*)::int AS runs FROM inserted GROUP BY account_id) n
	WHERE c.account_id = n.account_id)
SELECT a.ord::int, i.id IS NOT NULL FROM admitted a LEFT JOIN inserted i ON i.id = a.id`
)
