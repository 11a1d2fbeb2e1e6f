package badger

import (
	"encoding/json"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

func reasonOf(err error) string {
	var ue *store.UnwritableError
	if errors.As(err, &ue) {
		return ue.Reason
	}
	return ""
}

// TestWritableReserve: below the free-space reserve the store says
// disk_full, and says writable again as soon as space returns; a settle
// already under way still commits (the reserve is for it).
func TestWritableReserve(t *testing.T) {
	s, created := openWithAccount(t, Options{MinFreeBytes: 100 << 20})
	var free atomic.Uint64
	free.Store(1 << 30)
	s.guard.freeSpace = func(string) (uint64, error) { return free.Load(), nil }
	if err := s.Writable(); err != nil {
		t.Fatalf("1 GiB free: %v", err)
	}
	free.Store(99 << 20)
	s.guard.checked = time.Time{} // read again now
	err := s.Writable()
	if !errors.Is(err, store.ErrUnwritable) || reasonOf(err) != store.ReasonDiskFull {
		t.Fatalf("99 MiB free, reserve 100 MiB: %v, want disk_full", err)
	}
	run := &runs.Run{ID: "ext_1", Status: runs.StatusCompleted, AccountID: "acme", CreatedAt: created,
		Data: []json.RawMessage{json.RawMessage(`{"a":1}`)}}
	if _, err := s.Settle(t.Context(), store.Settlement{Run: run, Price: 10, Offer: "o", Platform: "p", Now: created}); err != nil {
		t.Errorf("a settle under way while the reserve is crossed: %v", err)
	}
	free.Store(2 << 30)
	time.Sleep(statEvery)
	if err := s.Writable(); err != nil {
		t.Errorf("space back: %v, want writable", err)
	}
	s.guard.freeSpace = func(string) (uint64, error) { return 0, syscall.EIO }
	s.guard.checked = time.Time{}
	if err := s.Writable(); reasonOf(err) != store.ReasonWriteFailed {
		t.Errorf("statfs failing: %v, want write_failed", err)
	}
}

// TestWriteFault: a commit failing at the file layer writes nothing (no
// run, no charge, the hold released), makes the store unwritable, and the
// store recovers by itself once writes succeed again.
func TestWriteFault(t *testing.T) {
	s, created := openWithAccount(t, Options{})
	start := balance(t, s)
	fault := error(syscall.ENOSPC)
	s.writeFault.Store(&fault)
	if _, err := s.Reserve(t.Context(), store.Hold{ID: "ext_1", AccountID: "acme", Price: 10, Records: 1, Now: created}); err != nil {
		t.Fatal(err)
	}
	run := &runs.Run{ID: "ext_1", Status: runs.StatusCompleted, AccountID: "acme", CreatedAt: created,
		Data: []json.RawMessage{json.RawMessage(`{"a":1}`)}}
	if _, err := s.Settle(t.Context(), store.Settlement{Run: run, Price: 10, Offer: "o", Platform: "p", Now: created}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("settle on a failing disk: %v, want ENOSPC", err)
	}
	if _, err := s.GetRun(t.Context(), "acme", "ext_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("run after a failed settle: %v, want not found", err)
	}
	if b := balance(t, s); b != start {
		t.Errorf("balance %d after a failed settle, want %d", b, start)
	}
	if _, held := s.holds.amount("ext_1"); held {
		t.Error("the failed settle's hold is still held")
	}
	if err := s.Writable(); reasonOf(err) != store.ReasonWriteFailed {
		t.Fatalf("after a failed commit: %v, want write_failed", err)
	}
	// Still failing: the probe fails too and the store stays unwritable.
	time.Sleep(probeEvery + 50*time.Millisecond)
	_ = s.Writable()
	time.Sleep(100 * time.Millisecond)
	if err := s.Writable(); reasonOf(err) != store.ReasonWriteFailed {
		t.Fatalf("probe on a still failing disk: %v, want write_failed", err)
	}
	s.writeFault.Store(nil)
	deadline := time.Now().Add(5 * time.Second)
	for s.Writable() != nil {
		if time.Now().After(deadline) {
			t.Fatal("store still unwritable 5 s after the disk recovered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	run.Data = []json.RawMessage{json.RawMessage(`{"a":1}`)}
	if res, err := s.Settle(t.Context(), store.Settlement{Run: run, Price: 10, Offer: "o", Platform: "p", Now: created}); err != nil || res.Charged != 10 {
		t.Fatalf("settle after recovery: %+v, %v", res, err)
	}
	if b := balance(t, s); b != start-10 {
		t.Errorf("balance %d, want %d", b, start-10)
	}
}

func balance(t *testing.T, s *Store) int64 {
	t.Helper()
	a, err := s.GetAccount(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	return int64(a.Balance)
}
