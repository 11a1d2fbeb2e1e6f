package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// maxGroup bounds the calls one grouped transaction carries.
const maxGroup = 64

// maxLeaders is how many group transactions of one kind a node runs at
// once: while one waits for its WAL flush, the next is already collecting
// and writing.
const maxLeaders = 2

// line groups the calls of one kind (settles, reserves) on this node,
// PostgreSQL's group commit done one level up. A call locks its account
// row and keeps the lock through the commit's WAL flush, so calls on one
// hot account would run one per flush, and calls on separate accounts one
// per pooled connection and flush. A call that arrives while maxLeaders
// group transactions are in flight waits, and the next transaction takes
// every call that waited (up to maxGroup): the accounts locked in id order
// (the order every node uses, so nodes cannot deadlock), one flush for
// all. Other nodes still serialize on the row locks, which keeps every
// debit and hold safe across nodes.
type line[W any] struct {
	mu      sync.Mutex
	queue   []*queued[W] // waiting for a leader, oldest first
	leaders int          // groups in flight, at most maxLeaders
	grouped atomic.Int64 // calls committed in a transaction of two or more
}

// queued is one call waiting in a line.
type queued[W any] struct {
	w    W
	wake chan bool // true: lead the next group; false: done, w holds the outcome
}

// GroupedSettles reports how many settles this Store committed together
// with others in one transaction.
func (s *Store) GroupedSettles() int64 { return s.settles.grouped.Load() }

// GroupedReserves reports how many reserves this Store committed together
// with others in one transaction.
func (s *Store) GroupedReserves() int64 { return s.reserves.grouped.Load() }

// do returns once run has handled w, in a group w leads or in another
// caller's group. run sets each call's outcome in its W and reports
// whether the group committed in one transaction.
func (l *line[W]) do(w W, run func(group []W) (together bool)) {
	q := &queued[W]{w: w, wake: make(chan bool, 1)}
	l.mu.Lock()
	if l.leaders >= maxLeaders {
		l.queue = append(l.queue, q)
		l.mu.Unlock()
		if lead := <-q.wake; !lead {
			return
		}
		l.mu.Lock() // q leads in the slot its waker handed over
	} else {
		l.leaders++
	}
	n := min(len(l.queue), maxGroup-1)
	group := make([]*queued[W], 0, n+1)
	group = append(append(group, q), l.queue[:n]...)
	l.queue = l.queue[n:]
	l.mu.Unlock()

	ws := make([]W, len(group))
	for i, g := range group {
		ws[i] = g.w
	}
	if run(ws) && len(ws) > 1 {
		l.grouped.Add(int64(len(ws)))
	}

	// Hand the slot to the oldest waiter, taken off the queue so that no
	// other leader can pick it too.
	l.mu.Lock()
	var next *queued[W]
	if len(l.queue) > 0 {
		next = l.queue[0]
		l.queue = l.queue[1:]
	} else {
		l.leaders--
	}
	l.mu.Unlock()
	for _, g := range group[1:] {
		g.wake <- false
	}
	if next != nil {
		next.wake <- true
	}
}

// waiter is one Settle call in the line.
type waiter struct {
	ctx context.Context
	p   *settle.Prepared
	pk  settle.Packed
	res store.SettleResult
	err error
}

// settleGroup settles every waiter of group, setting res and err. A group
// whose transaction fails is settled one by one, so a bad settle (a taken
// run id, say) fails alone with its own error. A group of one takes the
// same two round trips.
func (s *Store) settleGroup(group []*waiter) (together bool) {
	results, ambiguous, err := s.settleTogether(group)
	if ambiguous {
		// The group may have committed: a settle whose run is stored
		// answers it, the others settle one by one.
		for _, g := range group {
			var ok bool
			if g.res, ok, g.err = s.committed(context.WithoutCancel(g.ctx), g.p); g.err == nil && !ok {
				g.res, g.err = s.settleOne(g.ctx, g.p, g.pk)
			}
		}
		return false
	}
	if err == nil {
		for i, g := range group {
			g.res = results[i]
			g.p.Apply(results[i].Records, results[i].Charged)
		}
		return true
	}
	for _, g := range group {
		g.res, g.err = s.settleOne(g.ctx, g.p, g.pk)
	}
	return false
}

// settleTogether settles the waiters in ONE transaction, in queue order,
// as consecutive Settle calls would: each is charged what its account's
// balance, left by the previous ones, pays for. Debits, usage and key spend
// are summed per row, so each row is written once. The transaction takes
// two round trips (pipelineTx): the account locks and the holds' capture,
// then every write and the COMMIT.
func (s *Store) settleTogether(group []*waiter) ([]store.SettleResult, bool, error) {
	// Settle's callers pass a context that outlives the client
	// (context.WithoutCancel), but the group must not depend on one of
	// them: it has its own bound.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var accounts []string
	for _, g := range group {
		accounts = append(accounts, g.p.S.Run.AccountID)
	}
	slices.Sort(accounts)
	accounts = slices.Compact(accounts)
	ids := make([]string, len(group))
	for i, g := range group {
		ids[i] = g.p.S.Run.ID
	}
	results := make([]store.SettleResult, len(group))
	var (
		balance map[string]int64
		held    map[string]credits.Micros
	)
	reads := func(b *pgx.Batch) {
		balance, held = make(map[string]int64, len(accounts)), map[string]credits.Micros{}
		// The statements' plans do not depend on their arrays' lengths,
		// but with short ones (one hot account) a custom plan looks
		// cheaper than the generic one and PostgreSQL planned every
		// statement again at every group: ~9 % of the backends' CPU.
		b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
		// The accounts locked in id order, then the holds captured: the
		// order of every settle and reserve, so none can deadlock.
		b.Queue(`SELECT id, balance FROM accounts WHERE id = ANY($1) ORDER BY id FOR UPDATE`, accounts).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var id string
				var v int64
				if err := rows.Scan(&id, &v); err != nil {
					return fmt.Errorf("locking %d accounts: %v", len(accounts), err)
				}
				balance[id] = v
			}
			return rows.Err()
		})
		b.Queue(takeHoldsSQL, ids).Query(func(rows pgx.Rows) error { return scanHolds(rows, held) })
	}
	writes := func(b *pgx.Batch) error {
		if len(balance) != len(accounts) {
			return fmt.Errorf("settling a group: %w", store.ErrNotFound) // settled one by one, the unknown one fails alone
		}
		return s.queueGroupWrites(b, group, accounts, balance, held, results)
	}
	ambiguous, err := s.pipelineTx(ctx, reads, writes)
	if err != nil {
		return nil, ambiguous, fmt.Errorf("settling a group of %d runs: %w", len(group), err)
	}
	return results, false, nil
}

// queueGroupWrites plans each settle of group on the locked balances and
// the captured holds, filling results, and queues the writes: the runs,
// one debit per account, the summed usage and key spend rows.
func (s *Store) queueGroupWrites(b *pgx.Batch, group []*waiter, accounts []string, balance map[string]int64,
	held map[string]credits.Micros, results []store.SettleResult) error {
	type usageKey struct {
		account         string
		day             time.Time
		offer, platform string
	}
	type usageSum struct{ requests, records, credits int64 }
	type spendKey struct {
		key, period string
		bucket      time.Time
	}
	usage := map[usageKey]*usageSum{}
	var usageOrder []usageKey
	spend := map[spendKey]int64{}
	var spendOrder []spendKey
	debit := map[string]int64{}
	for i, g := range group {
		st, p := g.p.S, g.p
		run := st.Run
		h, hasHold := held[run.ID]
		records, charged := p.Plan(settle.Payable(credits.Micros(balance[run.AccountID]), h, hasHold))
		doc, err := p.Doc(records, charged)
		if err != nil {
			return err
		}
		balance[run.AccountID] -= int64(charged)
		debit[run.AccountID] += int64(charged)
		results[i] = store.SettleResult{Records: records, Charged: charged, Balance: credits.Micros(balance[run.AccountID])}
		var keyID *string
		if run.KeyID != "" {
			keyID = &run.KeyID
		}
		queueInsertRun(b, run, keyID, charged, records, doc, g.pk)
		for _, add := range p.Usage(records, charged) {
			uk := usageKey{run.AccountID, store.PeriodStart(store.PeriodDay, p.Now), add.Offer, st.Platform}
			u := usage[uk]
			if u == nil {
				u = &usageSum{}
				usage[uk] = u
				usageOrder = append(usageOrder, uk)
			}
			u.requests += add.Requests
			u.records += add.Records
			u.credits += int64(add.Credits)
		}
		if run.KeyID != "" && charged > 0 {
			for _, per := range store.Periods {
				sk := spendKey{run.KeyID, per, store.PeriodStart(per, p.Now)}
				if _, ok := spend[sk]; !ok {
					spendOrder = append(spendOrder, sk)
				}
				spend[sk] += int64(charged)
			}
		}
	}
	// One statement per table for the small rows, whatever the group's
	// size: a statement costs the server a parse, a plan and an executor
	// start, more than each of these rows.
	var d struct {
		ids           []string
		amounts, want []int64
	}
	for _, acct := range accounts {
		if total := debit[acct]; total > 0 {
			d.ids, d.amounts, d.want = append(d.ids, acct), append(d.amounts, total), append(d.want, balance[acct])
		}
	}
	if len(d.ids) > 0 {
		b.Queue(debitSQL, d.ids, d.amounts, d.want)
	}
	var u struct {
		accounts, offers, platforms []string
		days                        []time.Time
		requests, records, sums     []int64
	}
	for _, uk := range usageOrder {
		v := usage[uk]
		u.accounts, u.days, u.offers, u.platforms = append(u.accounts, uk.account), append(u.days, uk.day), append(u.offers, uk.offer), append(u.platforms, uk.platform)
		u.requests, u.records, u.sums = append(u.requests, v.requests), append(u.records, v.records), append(u.sums, v.credits)
	}
	if len(u.accounts) > 0 {
		b.Queue(addUsagesSQL, u.accounts, u.days, u.offers, u.platforms, u.requests, u.records, u.sums)
	}
	var k struct {
		keys, periods []string
		buckets       []time.Time
		sums          []int64
	}
	for _, sk := range spendOrder {
		k.keys, k.periods, k.buckets, k.sums = append(k.keys, sk.key), append(k.periods, sk.period), append(k.buckets, sk.bucket), append(k.sums, spend[sk])
	}
	if len(k.keys) > 0 {
		b.Queue(addKeySpendsSQL, k.keys, k.periods, k.buckets, k.sums)
	}
	return nil
}

// debitSQL takes amount $2[i] from account $1[i], whose balance must then
// be $3[i] (what the settles planned on the balance read under the row
// lock). Both checks fail in the server, since the COMMIT follows in the
// same pipeline: the balance's CHECK (balance >= 0) refuses an overdraft,
// and a debited balance other than planned (which the row lock rules out),
// or an account not debited, divides by zero.
const debitSQL = `
WITH debited AS (
	UPDATE accounts a SET balance = a.balance - d.amount
	FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS d(id, amount, want)
	WHERE a.id = d.id
	RETURNING a.balance = d.want AS planned)
SELECT 1 / (count(*) FILTER (WHERE planned) = cardinality($1::text[]))::int FROM debited`

// addUsagesSQL and addKeySpendsSQL are addUsageSQL and addKeySpendSQL for
// many rows at once, each row once (the group sums them first: one
// statement may not update a row twice).
const (
	addUsagesSQL = `
INSERT INTO usage_daily (account_id, day, offer, platform, requests, records, credits)
SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[])
ON CONFLICT (account_id, day, offer, platform) DO UPDATE SET
	requests = usage_daily.requests + EXCLUDED.requests,
	records = usage_daily.records + EXCLUDED.records,
	credits = usage_daily.credits + EXCLUDED.credits`
	addKeySpendsSQL = `
INSERT INTO key_spend (key_id, period, bucket, credits)
SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[])
ON CONFLICT (key_id, period, bucket) DO UPDATE SET credits = key_spend.credits + EXCLUDED.credits`
)
