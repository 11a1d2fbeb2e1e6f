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
	"socialrouter/caddymodule/runs"
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
	groups  atomic.Int64 // groups run (each one transaction, or one by one after it failed)
}

// queued is one call waiting in a line.
type queued[W any] struct {
	w    W
	wake chan bool // true: lead the next group; false: done, w holds the outcome
}

// GroupedSettles reports how many settles this Store committed together
// with others in one transaction.
func (s *Store) GroupedSettles() int64 { return s.settles.grouped.Load() }

// SettleGroups reports how many groups of settles this Store ran: the
// settles over it are the settles per transaction.
func (s *Store) SettleGroups() int64 { return s.settles.groups.Load() }

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

	l.groups.Add(1)
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

// settleGroup settles every waiter of group, setting res and err. Almost
// every settle is paid in full (the balance and the hold cover every
// record), so the group is first settled so, in one round trip
// (settleFull); a group that is not (a balance or a hold short) runs
// settleTogether, which reads the balances before it plans. A group whose
// transaction fails is settled one by one, so a bad settle (a taken run
// id, say) fails alone with its own error.
func (s *Store) settleGroup(group []*waiter) (together bool) {
	results, ambiguous, err := s.settleFull(group)
	if err != nil && !ambiguous && pgCode(err) != codeUniqueViolation {
		results, ambiguous, err = s.settleTogether(group)
	}
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

// groupContext bounds a group's transaction. Settle's callers pass a
// context that outlives the client (context.WithoutCancel), but the group
// must not depend on one of them: it has its own bound.
func groupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// groupKeys returns the accounts of group, sorted and each once (the
// order the rows are locked in), and the run ids in group order.
func groupKeys(group []*waiter) (accounts, ids []string) {
	ids = make([]string, len(group))
	for i, g := range group {
		accounts = append(accounts, g.p.S.Run.AccountID)
		ids[i] = g.p.S.Run.ID
	}
	slices.Sort(accounts)
	return slices.Compact(accounts), ids
}

// settleFull settles the waiters in ONE transaction of ONE round trip, on
// the premise that each is paid in full: every record kept, at its full
// cost (settle.Prepared.Full), its document the one packed before it was
// queued. The server checks the premise and refuses the transaction when
// it does not hold, before COMMIT, in the same pipeline: an account not
// found, a hold smaller than its run's cost (division by zero in
// fullHoldsSQL), a balance short of its runs' costs (the balance's CHECK
// in debitFullSQL). The account rows are locked, in id order, only for
// the server's time to run the pipeline and flush the commit: no round
// trip to this process while they are held, where settleTogether holds
// them across its second round trip.
func (s *Store) settleFull(group []*waiter) ([]store.SettleResult, bool, error) {
	ctx, cancel := groupContext()
	defer cancel()
	accounts, ids := groupKeys(group)
	var w groupWrites
	charges := make([]int64, len(group))
	for i, g := range group {
		records, charged := g.p.Full()
		doc, err := g.p.Doc(records, charged)
		if err != nil {
			return nil, false, err
		}
		w.add(g, records, charged, doc)
		charges[i] = int64(charged)
	}
	var lockedIDs []string
	var balances []int64
	ambiguous, err := s.oneTripTx(ctx, func(b *pgx.Batch) {
		b.Queue("SET LOCAL plan_cache_mode = force_generic_plan") // see settleTogether
		b.Queue(lockFullSQL, accounts).QueryRow(func(row pgx.Row) error {
			var one int
			return row.Scan(&lockedIDs, &balances, &one)
		})
		b.Queue(fullHoldsSQL, ids, charges)
		var d struct {
			ids     []string
			amounts []int64
		}
		for _, acct := range accounts {
			if total := w.debit[acct]; total > 0 {
				d.ids, d.amounts = append(d.ids, acct), append(d.amounts, total)
			}
		}
		if len(d.ids) > 0 {
			b.Queue(debitFullSQL, d.ids, d.amounts)
		}
		w.queue(b)
	})
	if err != nil {
		return nil, ambiguous, fmt.Errorf("settling a group of %d runs in full: %w", len(group), err)
	}
	// Each settle's balance: the locked one less the costs of the group's
	// settles up to it, as consecutive settles would report.
	balance := make(map[string]int64, len(lockedIDs))
	for i, id := range lockedIDs {
		balance[id] = balances[i]
	}
	results := make([]store.SettleResult, len(group))
	for i, g := range group {
		records, charged := g.p.Full()
		balance[g.p.S.Run.AccountID] -= int64(charged)
		results[i] = store.SettleResult{Records: records, Charged: charged, Balance: credits.Micros(balance[g.p.S.Run.AccountID])}
	}
	return results, false, nil
}

// The statements of settleFull that check its premise in the server.
const (
	// lockFullSQL locks the accounts $1 in id order and returns their
	// balances; it divides by zero unless every one of them exists (an
	// aggregate: one row, so the check runs even when none does).
	lockFullSQL = `
SELECT coalesce(array_agg(id), '{}'), coalesce(array_agg(balance), '{}'),
	1 / (count(*) = cardinality($1::text[]))::int
FROM (SELECT id, balance FROM accounts WHERE id = ANY($1) ORDER BY id FOR UPDATE) locked`
	// fullHoldsSQL captures the holds of the runs $1 (takeHoldsSQL) and
	// divides by zero if one is smaller than its run's cost $2.
	fullHoldsSQL = `
WITH taken AS (DELETE FROM holds WHERE id = ANY($1) RETURNING id, amount)
SELECT 1 / (count(*) FILTER (WHERE t.amount < c.cost) = 0)::int
FROM taken t JOIN unnest($1::text[], $2::bigint[]) AS c(id, cost) ON c.id = t.id`
	// debitFullSQL takes amount $2[i] from account $1[i]; the balance's
	// CHECK (balance >= 0) refuses it when the balance is short.
	debitFullSQL = `
UPDATE accounts a SET balance = a.balance - d.amount
FROM unnest($1::text[], $2::bigint[]) AS d(id, amount)
WHERE a.id = d.id`
)

// settleTogether settles the waiters in ONE transaction, in queue order,
// as consecutive Settle calls would: each is charged what its account's
// balance, left by the previous ones, pays for. Debits, usage and key spend
// are summed per row, so each row is written once. The transaction takes
// two round trips (pipelineTx): the account locks and the holds' capture,
// then every write and the COMMIT.
func (s *Store) settleTogether(group []*waiter) ([]store.SettleResult, bool, error) {
	ctx, cancel := groupContext()
	defer cancel()
	accounts, ids := groupKeys(group)
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
// the captured holds, filling results, and queues the writes: one debit
// per account, then the runs, the summed usage and key spend rows.
func (s *Store) queueGroupWrites(b *pgx.Batch, group []*waiter, accounts []string, balance map[string]int64,
	held map[string]credits.Micros, results []store.SettleResult) error {
	var w groupWrites
	for i, g := range group {
		run := g.p.S.Run
		h, hasHold := held[run.ID]
		records, charged := g.p.Plan(settle.Payable(credits.Micros(balance[run.AccountID]), h, hasHold))
		doc, err := g.p.Doc(records, charged)
		if err != nil {
			return err
		}
		balance[run.AccountID] -= int64(charged)
		results[i] = store.SettleResult{Records: records, Charged: charged, Balance: credits.Micros(balance[run.AccountID])}
		w.add(g, records, charged, doc)
	}
	var d struct {
		ids           []string
		amounts, want []int64
	}
	for _, acct := range accounts {
		if total := w.debit[acct]; total > 0 {
			d.ids, d.amounts, d.want = append(d.ids, acct), append(d.amounts, total), append(d.want, balance[acct])
		}
	}
	if len(d.ids) > 0 {
		b.Queue(debitSQL, d.ids, d.amounts, d.want)
	}
	w.queue(b)
	return nil
}

// groupWrites gathers what a group's settles write. The small rows take
// one statement per table whatever the group's size (a statement costs
// the server a parse, a plan and an executor start, more than each of
// these rows), summed per row first (one statement may not update a row
// twice): debits, usage, key spend. The runs, whose documents are
// kilobytes, take one insert each (see queue).
type groupWrites struct {
	runs       []groupRun
	debit      map[string]int64 // per account
	usage      map[usageKey]*usageSum
	usageOrder []usageKey
	spend      map[spendKey]int64
	spendOrder []spendKey
}

// groupRun is one run of a group to insert (queueInsertRun's arguments).
type groupRun struct {
	run     *runs.Run
	keyID   *string
	charged credits.Micros
	records int
	doc     []byte
	pk      settle.Packed
}

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

// add gathers the writes of g's settle keeping records records, charged
// charged, stored as doc.
func (w *groupWrites) add(g *waiter, records int, charged credits.Micros, doc []byte) {
	if w.debit == nil {
		w.debit, w.usage, w.spend = map[string]int64{}, map[usageKey]*usageSum{}, map[spendKey]int64{}
	}
	p := g.p
	st, run := p.S, p.S.Run
	w.debit[run.AccountID] += int64(charged)
	var keyID *string
	if run.KeyID != "" {
		keyID = &run.KeyID
	}
	w.runs = append(w.runs, groupRun{run: run, keyID: keyID, charged: charged, records: records, doc: doc, pk: g.pk})
	for _, add := range p.Usage(records, charged) {
		uk := usageKey{run.AccountID, store.PeriodStart(store.PeriodDay, p.Now), add.Offer, st.Platform}
		u := w.usage[uk]
		if u == nil {
			u = &usageSum{}
			w.usage[uk] = u
			w.usageOrder = append(w.usageOrder, uk)
		}
		u.requests += add.Requests
		u.records += add.Records
		u.credits += int64(add.Credits)
	}
	if run.KeyID != "" && charged > 0 {
		for _, per := range store.Periods {
			sk := spendKey{run.KeyID, per, store.PeriodStart(per, p.Now)}
			if _, ok := w.spend[sk]; !ok {
				w.spendOrder = append(w.spendOrder, sk)
			}
			w.spend[sk] += int64(charged)
		}
	}
}

// queue queues the inserts of the runs and the usage and key-spend rows
// (not the debits, which settleFull and settleTogether check each their
// own way).
func (w *groupWrites) queue(b *pgx.Batch) {
	// The runs one statement each: one INSERT … SELECT FROM unnest of the
	// columns' arrays cost the backends ~100 µs more per settle (round
	// 13: the documents' bytea[] received, then the function scan's rows
	// materialized, before each was stored).
	for _, r := range w.runs {
		queueInsertRun(b, r.run, r.keyID, r.charged, r.records, r.doc, r.pk)
	}
	var u struct {
		accounts, offers, platforms []string
		days                        []time.Time
		requests, records, sums     []int64
	}
	for _, uk := range w.usageOrder {
		v := w.usage[uk]
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
	for _, sk := range w.spendOrder {
		k.keys, k.periods, k.buckets, k.sums = append(k.keys, sk.key), append(k.periods, sk.period), append(k.buckets, sk.bucket), append(k.sums, w.spend[sk])
	}
	if len(k.keys) > 0 {
		b.Queue(addKeySpendsSQL, k.keys, k.periods, k.buckets, k.sums)
	}
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
