package badger_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
	"socialrouter/caddymodule/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := badger.Open(t.TempDir(), badger.Options{})
		if err != nil {
			t.Fatalf("opening store: %v", err)
		}
		return s
	})
}

// TestReopen checks that what Settle committed survives a close and reopen,
// and that a second open of a live directory fails (the reason caddymodule
// shares one handle across reloads).
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Date(2025, 3, 12, 10, 0, 0, 0, time.UTC)
	if _, err := s.CreateAccount(ctx, "acme", 10_000_000, now); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"key_1", "key_2"} {
		if err := s.CreateKey(ctx, store.Key{ID: id, AccountID: "acme", Hash: [32]byte{id[4]}, Display: "d", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	run := &runs.Run{ID: "ext_1", Status: "completed", AccountID: "acme", KeyID: "key_1",
		Data: []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`)}}
	res, err := s.Settle(ctx, store.Settlement{Run: run, Price: 1725, Offer: "o", Platform: "p", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := badger.Open(dir, badger.Options{}); err == nil {
		t.Error("a second Open of a live directory succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	s, err = badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cases := []struct {
		name  string
		check func() error
	}{
		{"balance", func() error {
			a, err := s.GetAccount(ctx, "acme")
			if err == nil && a.Balance != res.Balance {
				err = fmt.Errorf("balance %s, want %s", a.Balance, res.Balance)
			}
			return err
		}},
		{"run", func() error {
			r, err := s.GetRun(ctx, "acme", "ext_1")
			if err == nil && (len(r.Data) != 2 || r.CreditsUsed != 3450 || r.KeyID != "key_1") {
				err = fmt.Errorf("run %+v", r)
			}
			return err
		}},
		{"key order continues after restart", func() error {
			if err := s.CreateKey(ctx, store.Key{ID: "key_0", AccountID: "acme", Hash: [32]byte{'0'}, Display: "d", CreatedAt: now}); err != nil {
				return err
			}
			keys, err := s.ListKeys(ctx, "acme")
			if err != nil {
				return err
			}
			var ids []string
			for _, k := range keys {
				ids = append(ids, k.ID)
			}
			if got := strings.Join(ids, ","); got != "key_1,key_2,key_0" {
				return fmt.Errorf("ListKeys = %s", got)
			}
			return nil
		}},
		{"spend", func() error {
			got, err := s.KeySpend(ctx, "key_1", store.PeriodMonth, now)
			if err == nil && got != 3450 {
				err = fmt.Errorf("spend %s", got)
			}
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLogger checks badger's lines reach the zap logger, its chatty info
// lines demoted to debug.
func TestLogger(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	s, err := badger.Open(t.TempDir(), badger.Options{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if logs.Len() == 0 {
		t.Fatal("badger logged nothing through zap")
	}
	for _, e := range logs.All() {
		if e.Level == zapcore.InfoLevel || strings.HasSuffix(e.Message, "\n") {
			t.Errorf("entry %v %q: want info lines at debug, without trailing newline", e.Level, e.Message)
		}
	}
}

// TestHoldsReleasedAtOpen: a hold is not persisted, so a store reopened
// after a crash (here: closed without settling) has the whole balance
// available again.
func TestHoldsReleasedAtOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := s.CreateAccount(ctx, "acme", 10, time.Now()); err != nil {
		t.Fatal(err)
	}
	h := store.Hold{ID: "ext_dead", AccountID: "acme", Price: 1, Records: 10}
	if res, err := s.Reserve(ctx, h); err != nil || res.Records != 10 {
		t.Fatalf("Reserve = %+v, %v", res, err)
	}
	h.ID = "ext_next"
	if res, _ := s.Reserve(ctx, h); res.Records != 0 {
		t.Fatalf("second Reserve while held = %+v, want 0 records", res)
	}
	s.Close()
	s, err = badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if res, err := s.Reserve(ctx, h); err != nil || res.Records != 10 {
		t.Errorf("Reserve after reopening = %+v, %v; want the whole balance", res, err)
	}
}
