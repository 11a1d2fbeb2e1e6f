package postgres

import (
	"context"
	"errors"
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

// maxGroup bounds the settles one grouped transaction carries.
const maxGroup = 64

// maxLeaders is how many group transactions one node runs at once: while
// one waits for its WAL flush, the next is already collecting and writing.
const maxLeaders = 2

// lines groups the settles of this node, PostgreSQL's group commit done
// one level up. A settle locks its account row and keeps the lock through
// the commit's WAL flush, so settles of one hot account would run one per
// flush, and settles of separate accounts one per pooled connection and
// flush. A settle that arrives while a group transaction is in flight
// waits, and the next transaction takes every settle that waited (up to
// maxGroup): the accounts locked in id order (the order every node uses, so
// nodes cannot deadlock), one flush for all. Other nodes still serialize
// on the row locks, which keeps every debit safe across nodes.
type lines struct {
	mu      sync.Mutex
	queue   []*waiter    // waiting for a leader, oldest first
	leaders int          // groups in flight, at most maxLeaders
	grouped atomic.Int64 // settles committed in a transaction of two or more
}

// GroupedSettles reports how many settles this Store committed together
// with others in one transaction.
func (s *Store) GroupedSettles() int64 { return s.lines.grouped.Load() }

// waiter is one Settle call in the line.
type waiter struct {
	ctx  context.Context
	p    *settle.Prepared
	res  store.SettleResult
	err  error
	wake chan bool // true: lead the next group; false: done, read res and err
}

// settle returns once p is settled, either in a group it leads or in
// another caller's group.
func (l *lines) settle(ctx context.Context, s *Store, p *settle.Prepared) (store.SettleResult, error) {
	w := &waiter{ctx: ctx, p: p, wake: make(chan bool, 1)}
	l.mu.Lock()
	if l.leaders >= maxLeaders {
		l.queue = append(l.queue, w)
		l.mu.Unlock()
		if lead := <-w.wake; !lead {
			return w.res, w.err
		}
		l.mu.Lock() // w leads in the slot its waker handed over
	} else {
		l.leaders++
	}
	n := min(len(l.queue), maxGroup-1)
	group := make([]*waiter, 0, n+1)
	group = append(append(group, w), l.queue[:n]...)
	l.queue = l.queue[n:]
	l.mu.Unlock()

	s.settleGroup(group)

	// Hand the slot to the oldest waiter, taken off the queue so that no
	// other leader can pick it too.
	l.mu.Lock()
	var next *waiter
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
	return w.res, w.err
}

// settleGroup settles every waiter of group, setting res and err. A group
// of one, or a group whose transaction fails, is settled one by one, so a
// bad settle (a taken run id, say) fails alone.
func (s *Store) settleGroup(group []*waiter) {
	if len(group) > 1 {
		results, ambiguous, err := s.settleTogether(group)
		if ambiguous {
			// The group may have committed: a settle whose run is stored
			// answers it, the others settle one by one.
			for _, g := range group {
				var ok bool
				if g.res, ok, g.err = s.committed(context.WithoutCancel(g.ctx), g.p); g.err == nil && !ok {
					g.res, g.err = s.settleOne(g.ctx, g.p)
				}
			}
			return
		}
		if err == nil {
			s.lines.grouped.Add(int64(len(group)))
			for i, g := range group {
				g.res = results[i]
				g.p.Apply(results[i].Records, results[i].Charged)
			}
			return
		}
	}
	for _, g := range group {
		g.res, g.err = s.settleOne(g.ctx, g.p)
	}
}

// settleTogether settles the waiters in ONE transaction, in queue order,
// as consecutive Settle calls would: each is charged what its account's
// balance, left by the previous ones, pays for. Debits, usage and key spend
// are summed per row, so each row is written once.
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
	results := make([]store.SettleResult, len(group))
	ambiguous, err := s.settleTx(ctx, func(tx pgx.Tx) error {
		balance := make(map[string]int64, len(accounts))
		rows, err := tx.Query(ctx, `SELECT id, balance FROM accounts WHERE id = ANY($1) ORDER BY id FOR UPDATE`, accounts)
		if err != nil {
			return fmt.Errorf("locking %d accounts: %v", len(accounts), err)
		}
		for rows.Next() {
			var id string
			var b int64
			if err := rows.Scan(&id, &b); err != nil {
				rows.Close()
				return fmt.Errorf("locking %d accounts: %v", len(accounts), err)
			}
			balance[id] = b
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("locking %d accounts: %v", len(accounts), err)
		}
		if len(balance) != len(accounts) {
			return fmt.Errorf("settling a group: %w", store.ErrNotFound) // settled one by one, the unknown one fails alone
		}
		ids := make([]string, len(group))
		for i, g := range group {
			ids[i] = g.p.S.Run.ID
		}
		held, err := takeHolds(ctx, tx, ids)
		if err != nil {
			return err
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
		usage := map[usageKey]*usageSum{}
		var usageOrder []usageKey
		spend := map[spendKey]int64{}
		var spendOrder []spendKey
		debit := map[string]int64{}
		b := &pgx.Batch{}
		for i, g := range group {
			st, p := g.p.S, g.p
			run := st.Run
			h, hasHold := held[run.ID]
			records, charged := settle.Plan(settle.Payable(credits.Micros(balance[run.AccountID]), h, hasHold), st.Price, len(p.Data))
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
			b.Queue(insertRunSQL, run.ID, run.AccountID, keyID, run.Status, int64(charged), run.CreatedAt, doc)
			uk := usageKey{run.AccountID, store.PeriodStart(store.PeriodDay, p.Now), st.Offer, st.Platform}
			u := usage[uk]
			if u == nil {
				u = &usageSum{}
				usage[uk] = u
				usageOrder = append(usageOrder, uk)
			}
			u.requests++
			u.records += int64(records)
			u.credits += int64(charged)
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
		for _, acct := range accounts {
			total := debit[acct]
			if total == 0 {
				continue
			}
			want := balance[acct]
			b.Queue(`
UPDATE accounts SET balance = balance - $2
WHERE id = $1 AND balance >= $2
RETURNING balance`, acct, total).QueryRow(func(row pgx.Row) error {
				var left int64
				err := row.Scan(&left)
				if errors.Is(err, pgx.ErrNoRows) {
					return fmt.Errorf("debiting %s would overdraw account %s", credits.Micros(total), acct)
				}
				if err == nil && left != want {
					return fmt.Errorf("account %s: balance %d after the debit, expected %d", acct, left, want)
				}
				return err
			})
		}
		for _, uk := range usageOrder {
			u := usage[uk]
			b.Queue(addUsageSQL, uk.account, uk.day, uk.offer, uk.platform, u.requests, u.records, u.credits)
		}
		for _, sk := range spendOrder {
			b.Queue(addKeySpendSQL, sk.key, sk.period, sk.bucket, spend[sk])
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, ambiguous, fmt.Errorf("settling a group of %d runs: %w", len(group), err)
	}
	return results, false, nil
}
