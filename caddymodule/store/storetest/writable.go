package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// WriteFault is the conformance case of a full or failing disk
// (store.WriteChecker), run by each store's tests with its own injection:
// fail(true) makes the store's writes fail as its disk would (badger: at
// its file layer; PostgreSQL: the database's disk_full), fail(false) gives
// the space back; wantReason is the reason the store must then report.
//
// While failing, a settle writes nothing (no run, no charge) and the store
// says it cannot write, with the reason; once the space is back it says it
// can again by itself within a few seconds, and a settle then charges, so
// the balance is the start minus what was charged.
func WriteFault(t *testing.T, s store.Store, fail func(bool), wantReason string) {
	var wc store.WriteChecker = s
	mustAccount(t, s, "acme", cr(1))
	start := balanceOf(t, s, "acme")
	if err := wc.Writable(); err != nil {
		t.Fatalf("a fresh store: %v", err)
	}
	fail(true)
	run := newRun("acme", "", 2)
	if _, err := s.Reserve(ctx(t), store.Hold{ID: run.ID, AccountID: "acme", Price: price, Records: 2, Now: base}); err == nil {
		_, err = s.Settle(ctx(t), settlement(run, price, base))
		if err == nil {
			t.Fatal("settle succeeded on a failing disk")
		}
	}
	err := wc.Writable()
	var ue *store.UnwritableError
	if !errors.Is(err, store.ErrUnwritable) || !errors.As(err, &ue) || ue.Reason != wantReason {
		t.Fatalf("after a write failed for want of space: %v, want reason %s", err, wantReason)
	}
	if _, err := s.GetRun(ctx(t), "acme", run.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("run after a failed settle: %v, want not found", err)
	}
	if b := balanceOf(t, s, "acme"); b != start {
		t.Errorf("balance %d after a failed settle, want %d", b, start)
	}
	fail(false)
	deadline := time.Now().Add(10 * time.Second)
	for wc.Writable() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the store still cannot write 10 s after space returned")
		}
		time.Sleep(50 * time.Millisecond)
	}
	again := newRun("acme", "", 2)
	again.Data = []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`)}
	res := mustSettle(t, s, settlement(again, price, base))
	if b := balanceOf(t, s, "acme"); b != start-res.Charged || res.Charged != 2*price {
		t.Errorf("balance %d after recovery, want %d − %d", b, start, res.Charged)
	}
	if r, err := s.GetRun(ctx(t), "acme", again.ID); err != nil || r.Status != runs.StatusCompleted {
		t.Errorf("run settled after recovery: %v", err)
	}
}
