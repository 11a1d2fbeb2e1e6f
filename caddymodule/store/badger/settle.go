package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/rundoc"
	"socialrouter/caddymodule/store/internal/settle"
)

// Settles are group-committed. Badger fsyncs once per transaction (its
// writer syncs the WAL after each request), so one transaction per Settle
// caps a hot account, and on a slow disk every account, at one settle per
// fsync; and badger's transactions are optimistic, so concurrent settles of
// one account would conflict and retry in a storm. Instead settles queue
// here and one of them, the leader, commits everything queued (up to
// maxBatch) in one transaction: settles are serialized in process (so no
// two ever race on a balance), one fsync covers the whole batch, each
// settle is still all-or-nothing, and none returns before the commit.
//
// CreateAccount and AddCredits queue here too, so the leader is the only
// writer of accounts, which keeps the account cache in commit order (see
// cache.go).
const (
	maxBatch      = 64      // writes per transaction
	maxBatchBytes = 4 << 20 // records per transaction, in bytes
)

// While writes come from several callers at once, a leader first gathers
// (gather): it waits while they keep arriving, gatherGap at most between
// two, gatherFor at most in all, so that the callers one commit woke come
// back into the next instead of each fsync carrying a few of them. On a
// 2-core machine with 16 callers of cache hits, whose durable writes are
// most of their CPU, this took a transaction from 4.5 writes to 13 and a
// hit from 424 to 244 µs of CPU (BenchmarkCachedHit; docs/perf-log.md,
// round 13). The window was 200 µs / 1 ms until round 20: live calls come
// back about a millisecond apart, so most gathers ended empty; with
// 1 ms / 4 ms an N = 1 call's CPU fell 15 % (e2e ÷ reverse_proxy 3.08 →
// 2.65 ×, N = 10 4.32 → 3.66 ×) and its p50 and p99 did not grow, since
// the syncs saved were CPU the calls waited for. At 2 ms / 8 ms (round 22)
// a commit carries more of the sixteen calls of an N = 10 load: their CPU
// fell 5-9 % (e2e ÷ reverse_proxy medians 3.18 → 2.90 ×, N = 1 2.81 →
// 2.66 ×, seven interleaved pairs) for about a millisecond at p50, while 32
// callers in a loop, whom the gap makes wait idle, settle about 12 % fewer
// per second (4,090 → 3,611, still above the 3,000 target). A lone
// writer (the last batch was one write) never waits. PostgreSQL's
// commit_delay and commit_siblings are the same idea.
const (
	gatherGap = 2 * time.Millisecond
	gatherFor = 8 * time.Millisecond
)

// committer is the write queue.
type committer struct {
	mu    sync.Mutex
	busy  bool // a leader is committing; queue[0] leads next
	queue []*writeReq
	// last is how many writes the last batch carried; gathering, that
	// the leader waits for more, each arrival then signalling arrived.
	last      int
	gathering bool
	arrived   chan struct{}
	// gap and most replace gatherGap and gatherFor when set (tests).
	gap, most time.Duration
	// batches and batched count the transactions and the writes they
	// carried (Batches).
	batches, batched atomic.Int64
}

// Batches reports how many transactions the write queue committed (or
// tried to) and how many writes they carried in all.
func (s *Store) Batches() (transactions, writes int64) {
	return s.settles.batches.Load(), s.settles.batched.Load()
}

// gather waits, c.mu held, while writes keep arriving: until the queue is
// a full batch, gatherGap passes with no arrival, or gatherFor in all.
func (c *committer) gather() {
	if c.arrived == nil {
		c.arrived = make(chan struct{}, 1)
	}
	select {
	case <-c.arrived: // a signal left from an earlier gather
	default:
	}
	gap, most := gatherGap, gatherFor
	if c.gap > 0 {
		gap, most = c.gap, c.most
	}
	deadline := time.Now().Add(most)
	t := time.NewTimer(gap)
	defer t.Stop()
	for len(c.queue) < maxBatch {
		wait := min(gap, time.Until(deadline))
		if wait <= 0 {
			return
		}
		t.Reset(wait)
		c.gathering = true
		c.mu.Unlock()
		arrived := false
		select {
		case <-c.arrived:
			arrived = true
		case <-t.C:
		}
		c.mu.Lock()
		c.gathering = false
		if !arrived {
			return
		}
	}
}

// writeReq is one write waiting for its commit.
type writeReq struct {
	account string // the account it reads and may write
	size    int    // bytes of records, for maxBatchBytes
	// apply adds the write to the batch. refused is the write's own
	// failure (unknown account, id taken, …), decided before it adds
	// anything; err fails the whole transaction. apply may run again
	// when the batch is retried or split.
	apply func(b *batch) (refused, err error)
	// hold is the id of the hold a settle captures: dropped in the same
	// step as the commit lands (see holds).
	hold string
	err  error     // refused, or the transaction's failure
	wake chan bool // true: lead the next batch; false: done
}

// write queues r and returns its outcome once committed.
func (s *Store) write(ctx context.Context, r *writeReq) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.wake = make(chan bool, 1)
	s.enqueue(r)
	return r.err
}

// Settle, in ONE transaction: debits min(len(Run.Data), balance/Price,
// hold/Price) records × Price from the run's account (never below zero;
// with Lines each record at its own price, see store.Store),
// releases the run's hold, truncates
// Run.Data to match, writes the run, adds to the daily usage rollup of
// (account, day, offer, platform) and to the key's spend in the current
// bucket of each period. A failed run (Price 0, no data) is written and
// counted as a request with no charge. The run's cache entries
// (store.Settlement.Cache) are written in the same transaction.
func (s *Store) Settle(ctx context.Context, st store.Settlement) (store.SettleResult, error) {
	p, err := settle.Prepare(st)
	if err != nil {
		return store.SettleResult{}, err
	}
	// The hold is the call's own: nothing else changes it meanwhile. The
	// commit drops it; a failed settle releases it here.
	held, hasHold := s.holds.amount(st.Run.ID)
	defer s.Release(ctx, st.Run.ID)
	hold := ""
	if hasHold {
		hold = st.Run.ID
	}
	var res store.SettleResult
	size := 0
	for _, d := range p.Data {
		size += len(d)
	}
	// Run documents are stored in rundoc's form (S2-compressed), so each
	// commit writes and syncs fewer value-log pages; compressed here, not in
	// the commit leader.
	pd := settle.Pack(p)
	entries, cacheErr := s.settleEntries(st.Cache)
	for _, e := range entries {
		size += len(e.Value)
	}
	err = s.write(ctx, &writeReq{account: st.Run.AccountID, size: size, hold: hold, apply: func(b *batch) (refused, err error) {
		res, refused, err = b.settle(p, pd, held, hasHold)
		for i := 0; i < len(entries) && refused == nil && err == nil; i++ {
			err = setCacheEntry(b.txn, entries[i])
		}
		return refused, err
	}})
	if err != nil {
		return store.SettleResult{}, fmt.Errorf("settling run %s: %w", st.Run.ID, err)
	}
	if len(entries) > 0 {
		cacheErr = s.cacheStored(ctx, entries, st.CacheMaxBytes)
	}
	res.CacheErr = cacheErr
	p.Apply(res.Records, res.Charged)
	p.Release()
	return res, nil
}

// settleEntries is the cache entries a settle stores in its commit: those
// worth keeping, none when the cache's index cannot be loaded.
func (s *Store) settleEntries(all []store.CacheEntry) ([]store.CacheEntry, error) {
	var keep []store.CacheEntry
	for _, e := range all {
		if cacheKeeps(e) {
			keep = append(keep, e)
		}
	}
	if len(keep) == 0 {
		return nil, nil
	}
	if err := s.cacheReady(); err != nil {
		return nil, err
	}
	return keep, nil
}

// enqueue returns once r is committed or has failed: it either waits for a
// leader to do it, or leads a batch itself and hands over to the next.
func (s *Store) enqueue(r *writeReq) {
	c := &s.settles
	c.mu.Lock()
	c.queue = append(c.queue, r)
	if c.busy {
		if c.gathering {
			select {
			case c.arrived <- struct{}{}:
			default:
			}
		}
		c.mu.Unlock()
		if lead := <-r.wake; !lead {
			return
		}
		c.mu.Lock()
	}
	c.busy = true
	if c.last > 1 {
		c.gather()
	}
	// r is queue[0]: take it and whoever waits behind it, within bounds.
	n, size := 0, 0
	for n < len(c.queue) && n < maxBatch && (n == 0 || size+c.queue[n].size <= maxBatchBytes) {
		size += c.queue[n].size
		n++
	}
	c.last = n
	c.batches.Add(1)
	c.batched.Add(int64(n))
	reqs := append([]*writeReq(nil), c.queue[:n]...)
	c.queue = c.queue[n:]
	c.mu.Unlock()

	ids := make([]string, len(reqs))
	for i, r := range reqs {
		ids[i] = r.account
	}
	s.accounts.begin(ids)
	s.commitSafely(reqs)
	s.accounts.end(ids)

	c.mu.Lock()
	var next *writeReq
	if len(c.queue) > 0 {
		next = c.queue[0]
	} else {
		c.busy = false
		c.queue = nil
	}
	c.mu.Unlock()
	if next != nil {
		next.wake <- true // first, so the next batch starts at once
	}
	for _, b := range reqs[1:] {
		b.wake <- false
	}
}

// commitSafely is commitBatch for the leader: a panic while writing the
// batch fails its writes instead of leaving the queue busy forever (every
// later write would wait for a leader that never hands over).
func (s *Store) commitSafely(reqs []*writeReq) {
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("internal error committing %d writes: %v", len(reqs), p)
			for _, r := range reqs {
				r.err = err
			}
			if s.accounts != nil {
				s.accounts.mu.Lock()
				for _, r := range reqs {
					s.accounts.items.remove(r.account) // the batch may have lowered it
				}
				s.accounts.mu.Unlock()
			}
		}
	}()
	s.commitBatch(reqs)
}

// batch is the transaction of a batch and the accounts it read, as the
// batch leaves them.
type batch struct {
	txn      *bdb.Txn
	accounts map[string]*accountWrite
}

// account returns the account as the batch has it so far; ok is false if
// it does not exist.
func (b *batch) account(id string) (a store.Account, ok bool, err error) {
	if w, seen := b.accounts[id]; seen {
		return w.after, w.exists, nil
	}
	a, err = readAccount(b.txn, id)
	if errors.Is(err, store.ErrNotFound) {
		b.accounts[id] = &accountWrite{}
		return store.Account{}, false, nil
	}
	if err != nil {
		return store.Account{}, false, err
	}
	b.accounts[id] = &accountWrite{before: a, after: a, existed: true, exists: true}
	return a, true, nil
}

// setAccount writes an account the batch read with account.
func (b *batch) setAccount(a store.Account) error {
	if err := b.txn.Set(accountKey(a.ID), encodeAccount(a)); err != nil {
		return err
	}
	w := b.accounts[a.ID]
	w.after, w.exists = a, true
	return nil
}

// commitBatch writes a batch in one transaction, retrying conflicts and
// splitting it if it is too big for one, and keeps the account cache in
// step with what it commits.
func (s *Store) commitBatch(reqs []*writeReq) {
	var blocked time.Time // when writes were first found blocked
	for attempt := 0; ; attempt++ {
		b := &batch{txn: s.db.NewTransaction(true), accounts: map[string]*accountWrite{}}
		var err error
		for _, r := range reqs {
			if r.err, err = r.apply(b); err != nil {
				break
			}
		}
		if err == nil {
			err = s.injected()
		}
		captures := err == nil && s.holds.capturing(reqs)
		if err == nil {
			s.accounts.lower(b.accounts)
			s.dropMu.RLock() // see Store.dropMu
			err = b.txn.Commit()
			s.dropMu.RUnlock()
		}
		b.txn.Discard()
		if captures {
			s.holds.captured(reqs, err == nil)
		}
		if err == nil {
			s.accounts.committed(b.accounts)
			for _, r := range reqs {
				s.trim.note(r.size)
			}
			s.guard.committed(nil)
			return
		}
		s.accounts.failed(b.accounts)
		switch {
		case errors.Is(err, bdb.ErrTxnTooBig) && len(reqs) > 1:
			s.commitBatch(reqs[:len(reqs)/2])
			s.commitBatch(reqs[len(reqs)/2:])
			return
		case errors.Is(err, bdb.ErrConflict) && attempt < maxRetries:
			continue
		case blockedWrites(err, &blocked):
			continue
		}
		s.guard.committed(err)
		for _, r := range reqs {
			r.err = err
		}
		return
	}
}

// settle adds one settlement to the batch. A failure of the settlement
// itself (unknown account, run id taken) is returned as refused, before
// anything is written; err is a transaction failure.
func (b *batch) settle(p *settle.Prepared, pd settle.Packed, held credits.Micros, hasHold bool) (res store.SettleResult, refused, err error) {
	run := p.S.Run
	a, ok, err := b.account(run.AccountID)
	if err != nil {
		return res, nil, err
	}
	if !ok {
		return res, fmt.Errorf("account %s: %w", run.AccountID, store.ErrNotFound), nil
	}
	rk := runKey(run.AccountID, run.ID)
	if taken, err := exists(b.txn, rk); err != nil || taken {
		if taken {
			return res, store.ErrExists, nil
		}
		return res, nil, err
	}
	records, charged := p.Plan(settle.Payable(a.Balance, held, hasHold))
	doc, err := p.Doc(records, charged)
	if err != nil {
		return res, err, nil
	}
	a.Balance -= charged
	if err := b.setAccount(a); err != nil {
		return res, nil, err
	}
	if err := b.txn.Set(rk, pd.Value(records, doc)); err != nil {
		return res, nil, err
	}
	if err := b.txn.Set(expiryKey(runCreated(p), run.AccountID, run.ID), nil); err != nil {
		return res, nil, err
	}
	for _, add := range p.Usage(records, charged) {
		uk := usageKey(run.AccountID, store.PeriodStart(store.PeriodDay, p.Now).Unix(), add.Offer, p.S.Platform)
		u, err := readUsage(b.txn, uk)
		if err != nil {
			return res, nil, err
		}
		u.Requests += add.Requests
		u.Records += add.Records
		u.Credits += add.Credits
		if err := b.txn.Set(uk, encodeUsage(u)); err != nil {
			return res, nil, err
		}
	}
	if run.KeyID != "" && charged > 0 {
		for _, period := range store.Periods {
			sk := spendKey(run.KeyID, period, store.PeriodStart(period, p.Now).Unix())
			spent, err := readSpend(b.txn, sk)
			if err != nil {
				return res, nil, err
			}
			if err := b.txn.Set(sk, binary.BigEndian.AppendUint64(nil, uint64(spent+charged))); err != nil {
				return res, nil, err
			}
		}
	}
	return store.SettleResult{Records: records, Charged: charged, Balance: a.Balance}, nil, nil
}

// A usage row's counters are stored as three big-endian int64s.
func encodeUsage(u store.UsageRow) []byte {
	b := make([]byte, 0, 24)
	b = binary.BigEndian.AppendUint64(b, uint64(u.Requests))
	b = binary.BigEndian.AppendUint64(b, uint64(u.Records))
	return binary.BigEndian.AppendUint64(b, uint64(u.Credits))
}

func decodeUsage(b []byte, u *store.UsageRow) error {
	if len(b) != 24 {
		return errors.New("bad usage record")
	}
	u.Requests = int64(binary.BigEndian.Uint64(b[0:8]))
	u.Records = int64(binary.BigEndian.Uint64(b[8:16]))
	u.Credits = credits.Micros(binary.BigEndian.Uint64(b[16:24]))
	return nil
}

func readUsage(txn *bdb.Txn, key []byte) (store.UsageRow, error) {
	var u store.UsageRow
	item, err := txn.Get(key)
	if errors.Is(err, bdb.ErrKeyNotFound) {
		return u, nil
	}
	if err != nil {
		return u, err
	}
	err = item.Value(func(b []byte) error { return decodeUsage(b, &u) })
	return u, err
}

// GetRun returns a run of the account; ErrNotFound for an unknown id or
// another account's run.
func (s *Store) GetRun(ctx context.Context, accountID, runID string) (runs.Run, error) {
	if err := ctx.Err(); err != nil {
		return runs.Run{}, err
	}
	if !settle.ValidID(accountID) || !settle.ValidID(runID) {
		return runs.Run{}, fmt.Errorf("getting run %q: %w", runID, store.ErrNotFound)
	}
	var doc []byte
	err := s.db.View(func(txn *bdb.Txn) (err error) {
		doc, err = get(txn, runKey(accountID, runID))
		if err == nil {
			doc, err = rundoc.Append(nil, doc)
		}
		return err
	})
	if err != nil {
		return runs.Run{}, fmt.Errorf("getting run %s: %w", runID, err)
	}
	s.trim.note(len(doc))
	return settle.DecodeRun(doc)
}

// Usage returns the account's rollup rows with Day >= since.
func (s *Store) Usage(ctx context.Context, accountID string, since time.Time) ([]store.UsageRow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	from := store.PeriodStart(store.PeriodDay, since)
	if from.Before(since) {
		from = from.AddDate(0, 0, 1)
	}
	rows := []store.UsageRow{}
	prefix := usagePrefix(accountID)
	err := s.db.View(func(txn *bdb.Txn) error {
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		start := binary.BigEndian.AppendUint64(bytes.Clone(prefix), sortable(from.Unix()))
		for it.Seek(start); it.ValidForPrefix(prefix); it.Next() {
			k := it.Item().Key()[len(prefix):]
			sep := -1
			if len(k) > 8 {
				sep = bytes.IndexByte(k[8:], 0)
			}
			if sep < 0 {
				return fmt.Errorf("bad usage key %q", it.Item().Key())
			}
			u := store.UsageRow{
				Day:      time.Unix(unsortable(binary.BigEndian.Uint64(k[:8])), 0).UTC(),
				Offer:    string(k[8 : 8+sep]),
				Platform: string(k[8+sep+1:]),
			}
			if err := it.Item().Value(func(b []byte) error { return decodeUsage(b, &u) }); err != nil {
				return err
			}
			rows = append(rows, u)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading usage of account %s: %v", accountID, err)
	}
	return rows, nil
}
