package badger

import (
	"encoding/json"
	"testing"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/storetest"
)

// TestLedgerBackfill: a store written before the ledger (no rows, no
// marker) gets an opening row per account at its next open, of the
// balance plus what was charged, so balance = Σ ledger; the marker keeps
// the next open from doing it again.
func TestLedgerBackfill(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Date(2025, 3, 12, 10, 0, 0, 0, time.UTC)
	for _, id := range []string{"acme", "empty"} {
		if _, err := s.CreateAccount(ctx, id, map[string]credits.Micros{"acme": 10 * credits.PerCredit}[id], now); err != nil {
			t.Fatal(err)
		}
	}
	run := &runs.Run{ID: "ext_1", AccountID: "acme", Status: "completed", Data: []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`)},
		CreatedAt: now, CompletedAt: now}
	if _, err := s.Settle(ctx, store.Settlement{Run: run, Price: 1725, Offer: "o", Platform: "p", Now: now}); err != nil {
		t.Fatal(err)
	}
	// As a store of before the ledger: no rows, no marker.
	if err := s.db.Update(func(txn *bdb.Txn) error {
		if err := txn.Delete(ledgerMarker); err != nil {
			return err
		}
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: []byte{pLedger, ledRow}})
		var keys [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	for range 2 { // the second open must not add another row
		s, err = Open(dir, Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		storetest.LedgerMatchesBalance(t, s, "acme")
		storetest.LedgerMatchesBalance(t, s, "empty")
		rows, err := s.Transactions(ctx, "acme", store.LedgerCursor{}, 10)
		if err != nil || len(rows) != 2 || rows[0].Kind != store.LedgerOpening || rows[0].Amount != 10*credits.PerCredit {
			t.Errorf("rows after the backfill: %+v, %v", rows, err)
		}
		s.Close()
	}
}
