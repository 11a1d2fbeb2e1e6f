package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// The ledger lives under one prefix, a sub-kind byte after it:
//
//	P l account NUL time id     → ledger row (JSON)
//	P e eventID                 → account ("" for an orphan): events applied or recorded
//	P o time eventID            → orphan payment (JSON)
//	P b account                 → billing settings (JSON)
//	P r reference NUL account   → "" (the accounts of a provider object)
//	P s account NUL kind NUL ref → Σ of the rows of a kind and reference (cumulative moves)
//
// Ledger writes go through the write queue like AddCredits, so the
// balance and its row commit together and in order with settles.
const pLedger = 'P'

const (
	ledRow      = 'l'
	ledEvent    = 'e'
	ledOrphan   = 'o'
	ledSettings = 'b'
	ledRef      = 'r'
	ledSum      = 's'
)

func ledKey(kind byte, parts ...string) []byte {
	return append([]byte{pLedger, kind}, join(0, parts...)[1:]...)
}

func ledRowPrefix(account string) []byte { return append(ledKey(ledRow, account), 0) }

func ledRowKey(e store.LedgerEntry) []byte {
	b := binary.BigEndian.AppendUint64(ledRowPrefix(e.AccountID), sortable(e.CreatedAt.UnixMicro()))
	return append(b, e.ID...)
}

// Move changes the balance and writes its ledger row in one commit.
func (s *Store) Move(ctx context.Context, e store.LedgerEntry) (store.LedgerEntry, error) {
	e, err := e.Prepared(time.Now())
	if err != nil {
		return e, err
	}
	var out store.LedgerEntry
	err = s.write(ctx, &writeReq{account: e.AccountID, apply: func(b *batch) (refused, err error) {
		out, refused, err = b.move(e)
		return refused, err
	}})
	if err != nil {
		return store.LedgerEntry{}, fmt.Errorf("moving %s credits on account %s: %w", e.Amount, e.AccountID, err)
	}
	return out, nil
}

// move adds one movement to the batch (the transaction sees the batch's
// own earlier writes, so a duplicate event in the same batch is seen).
func (b *batch) move(e store.LedgerEntry) (out store.LedgerEntry, refused, err error) {
	a, ok, err := b.account(e.AccountID)
	if err != nil || !ok {
		if !ok && err == nil {
			refused = store.ErrNotFound
		}
		return out, refused, err
	}
	if e.EventID != "" {
		if seen, err := exists(b.txn, ledKey(ledEvent, e.EventID)); err != nil || seen {
			if seen {
				refused = store.ErrDuplicateEvent
			}
			return out, refused, err
		}
	}
	sumKey := ledKey(ledSum, e.AccountID, e.Kind, e.Reference)
	var sofar credits.Micros
	if e.Cumulative {
		if sofar, err = readMicros(b.txn, sumKey); err != nil {
			return out, nil, err
		}
	}
	amount, ok, err := e.Delta(a.Balance, sofar)
	if err != nil {
		return out, err, nil // refused before anything is written
	}
	if e.EventID != "" {
		if err := b.txn.Set(ledKey(ledEvent, e.EventID), []byte(e.AccountID)); err != nil {
			return out, nil, err
		}
	}
	if !ok {
		return out, store.ErrDuplicateEvent, nil // the event is recorded: nothing left to move
	}
	a.Balance += amount
	if err := b.setAccount(a); err != nil {
		return out, nil, err
	}
	e.Amount, e.Balance = amount, a.Balance
	doc, err := json.Marshal(e)
	if err != nil {
		return out, nil, err
	}
	if err := b.txn.Set(ledRowKey(e), doc); err != nil {
		return out, nil, err
	}
	if e.Reference != "" {
		if err := b.txn.Set(ledKey(ledRef, e.Reference, e.AccountID), nil); err != nil {
			return out, nil, err
		}
		if err := b.txn.Set(sumKey, binary.BigEndian.AppendUint64(nil, uint64(sofar+amount))); err != nil {
			return out, nil, err
		}
	}
	return e, nil, nil
}

// readMicros reads a stored int64, 0 when absent.
func readMicros(txn *bdb.Txn, key []byte) (credits.Micros, error) {
	v, err := get(txn, key)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil || len(v) != 8 {
		return 0, fmt.Errorf("reading %q: bad record (%v)", key, err)
	}
	return credits.Micros(binary.BigEndian.Uint64(v)), nil
}

// Transactions merges the stored rows with the run charges per day, read
// from the usage rollup.
func (s *Store) Transactions(ctx context.Context, accountID string, after store.LedgerCursor, limit int) ([]store.LedgerEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return []store.LedgerEntry{}, nil
	}
	var rows []store.LedgerEntry
	var days map[time.Time]credits.Micros
	// One read transaction: the rows and the usage are the same moment's,
	// so their sum is the balance that moment had.
	err := s.db.View(func(txn *bdb.Txn) error {
		if _, err := readAccount(txn, accountID); err != nil {
			return err
		}
		prefix := ledRowPrefix(accountID)
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix, Reverse: true, PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		seek := append(bytes.Clone(prefix), 0xff)
		if !after.At.IsZero() {
			seek = append(binary.BigEndian.AppendUint64(bytes.Clone(prefix), sortable(after.At.UnixMicro())), after.ID...)
		}
		for it.Seek(seek); it.ValidForPrefix(prefix) && len(rows) < limit; it.Next() {
			var e store.LedgerEntry
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &e) }); err != nil {
				return err
			}
			if after.Before(e) {
				rows = append(rows, e)
			}
		}
		var err error
		days, err = chargesPerDay(txn, accountID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing the ledger of %s: %w", accountID, err)
	}
	return mergeRunCharges(rows, accountID, days, after, limit), nil
}

// chargesPerDay sums the account's usage rows' credits per UTC day.
func chargesPerDay(txn *bdb.Txn, accountID string) (map[time.Time]credits.Micros, error) {
	days := map[time.Time]credits.Micros{}
	prefix := usagePrefix(accountID)
	it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	for it.Rewind(); it.ValidForPrefix(prefix); it.Next() {
		k := it.Item().Key()[len(prefix):]
		if len(k) < 8 {
			return nil, fmt.Errorf("bad usage key %q", it.Item().Key())
		}
		day := time.Unix(unsortable(binary.BigEndian.Uint64(k[:8])), 0).UTC()
		var u store.UsageRow
		if err := it.Item().Value(func(b []byte) error { return decodeUsage(b, &u) }); err != nil {
			return nil, err
		}
		days[day] += u.Credits
	}
	return days, nil
}

// mergeRunCharges adds to rows (newest first, at most limit) the derived
// run-charge row of each day with charges, after the cursor, and
// keeps the newest limit.
func mergeRunCharges(rows []store.LedgerEntry, accountID string, days map[time.Time]credits.Micros, after store.LedgerCursor, limit int) []store.LedgerEntry {
	for day, c := range days {
		e := store.LedgerEntry{ID: store.RunChargesDayID(day), AccountID: accountID, Kind: store.LedgerRunCharges, Amount: -c, CreatedAt: day}
		if c > 0 && after.Before(e) {
			rows = append(rows, e)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].CreatedAt.Equal(rows[j].CreatedAt) {
			return rows[i].CreatedAt.After(rows[j].CreatedAt)
		}
		return rows[i].ID > rows[j].ID
	})
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows
}

// ReferenceAccount returns the first account with rows of reference.
func (s *Store) ReferenceAccount(ctx context.Context, reference string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var account string
	err := s.db.View(func(txn *bdb.Txn) error {
		prefix := append(ledKey(ledRef, reference), 0)
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix})
		defer it.Close()
		it.Rewind()
		if !it.ValidForPrefix(prefix) || reference == "" {
			return store.ErrNotFound
		}
		account = string(it.Item().Key()[len(prefix):])
		return nil
	})
	return account, err
}

// RecordOrphan stores a payment no account took, once per event.
func (s *Store) RecordOrphan(ctx context.Context, o store.OrphanPayment) error {
	o.CreatedAt = o.CreatedAt.UTC().Truncate(time.Microsecond)
	doc, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return s.update(ctx, func(txn *bdb.Txn) error {
		ek := ledKey(ledEvent, o.EventID)
		if seen, err := exists(txn, ek); err != nil || seen {
			if seen {
				return store.ErrDuplicateEvent
			}
			return err
		}
		if err := txn.Set(ek, nil); err != nil {
			return err
		}
		k := binary.BigEndian.AppendUint64([]byte{pLedger, ledOrphan}, sortable(o.CreatedAt.UnixMicro()))
		return txn.Set(append(k, o.EventID...), doc)
	})
}

// Orphans lists the orphan payments, newest first.
func (s *Store) Orphans(ctx context.Context, limit int) ([]store.OrphanPayment, error) {
	out := []store.OrphanPayment{}
	err := s.db.View(func(txn *bdb.Txn) error {
		prefix := []byte{pLedger, ledOrphan}
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix, Reverse: true, PrefetchValues: true})
		defer it.Close()
		for it.Seek(append(bytes.Clone(prefix), 0xff)); it.ValidForPrefix(prefix) && len(out) < limit; it.Next() {
			var o store.OrphanPayment
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &o) }); err != nil {
				return err
			}
			out = append(out, o)
		}
		return nil
	})
	return out, err
}

// BillingSettings returns an account's settings.
func (s *Store) BillingSettings(ctx context.Context, accountID string) (store.BillingSettings, error) {
	var bs store.BillingSettings
	err := s.db.View(func(txn *bdb.Txn) (err error) {
		bs, err = readSettings(txn, accountID)
		return err
	})
	return bs, err
}

func readSettings(txn *bdb.Txn, accountID string) (store.BillingSettings, error) {
	var bs store.BillingSettings
	if _, err := readAccount(txn, accountID); err != nil {
		return bs, err
	}
	v, err := get(txn, ledKey(ledSettings, accountID))
	if errors.Is(err, store.ErrNotFound) {
		return bs, nil
	}
	if err != nil {
		return bs, err
	}
	return bs, json.Unmarshal(v, &bs)
}

// UpdateBillingSettings applies fn in an optimistic transaction: a
// concurrent update conflicts and fn runs again on what it committed.
func (s *Store) UpdateBillingSettings(ctx context.Context, accountID string, fn func(*store.BillingSettings) error) (store.BillingSettings, error) {
	var out store.BillingSettings
	err := s.update(ctx, func(txn *bdb.Txn) error {
		bs, err := readSettings(txn, accountID)
		if err != nil {
			return err
		}
		if err := fn(&bs); err != nil {
			return err
		}
		doc, err := json.Marshal(bs)
		if err != nil {
			return err
		}
		out = bs
		return txn.Set(ledKey(ledSettings, accountID), doc)
	})
	return out, err
}

// openingRow writes the ledger row of the balance a new account starts
// with.
func (b *batch) openingRow(a store.Account) error {
	e, err := store.LedgerEntry{AccountID: a.ID, Kind: store.LedgerOpening, Amount: a.Balance, Balance: a.Balance, CreatedAt: a.CreatedAt}.Prepared(a.CreatedAt)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return b.txn.Set(ledRowKey(e), doc)
}

// ledgerMarker says every account has its opening row: accounts created
// before the ledger existed get one at the first open (backfillLedger).
var ledgerMarker = []byte{pMarker, 'l'}

// backfillLedger gives each account without ledger rows an opening row of
// its balance plus what it has been charged, so balance = Σ ledger holds
// from the start, then sets the marker. It runs in Open, before any write.
func (s *Store) backfillLedger() error {
	var done bool
	if err := s.db.View(func(txn *bdb.Txn) (err error) { done, err = exists(txn, ledgerMarker); return err }); err != nil || done {
		return err
	}
	accounts, err := s.ListAccounts(context.Background())
	if err != nil {
		return err
	}
	for _, a := range accounts {
		err := s.update(context.Background(), func(txn *bdb.Txn) error {
			it := txn.NewIterator(bdb.IteratorOptions{Prefix: ledRowPrefix(a.ID)})
			it.Rewind()
			has := it.ValidForPrefix(ledRowPrefix(a.ID))
			it.Close()
			if has {
				return nil
			}
			days, err := chargesPerDay(txn, a.ID)
			if err != nil {
				return err
			}
			opening := a.Balance
			for _, c := range days {
				opening += c
			}
			if opening == 0 {
				return nil
			}
			e, err := store.LedgerEntry{AccountID: a.ID, Kind: store.LedgerOpening, Amount: opening, Balance: opening, CreatedAt: a.CreatedAt}.Prepared(a.CreatedAt)
			if err != nil {
				return err
			}
			doc, err := json.Marshal(e)
			if err != nil {
				return err
			}
			return txn.Set(ledRowKey(e), doc)
		})
		if err != nil {
			return fmt.Errorf("account %s: %w", a.ID, err)
		}
	}
	return s.update(context.Background(), func(txn *bdb.Txn) error { return txn.Set(ledgerMarker, nil) })
}
