package badger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/storetest"
)

// startBalance is what every account of the backup tests starts with.
const startBalance credits.Micros = 1_000_000

// checkBalances opens the store in dir and checks its balances against
// its runs (storetest.BalancesMatchRuns); it returns the number of runs.
func checkBalances(t *testing.T, dir string, accounts []string) int {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return storetest.BalancesMatchRuns(t, s, startBalance, accounts...)
}

// TestBackupUnderLoad: a full and an incremental backup taken while 16
// callers settle runs restore to stores in which every account's balance
// is its start minus the charges of the runs the store holds (the snapshot
// holds each settle whole or not at all), the incremental one holding more
// runs; a restore into a store that has data is refused.
func TestBackupUnderLoad(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	accounts := []string{"a1", "a2", "a3", "a4"}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range accounts {
		if _, err := s.CreateAccount(t.Context(), id, startBalance, now); err != nil {
			t.Fatal(err)
		}
	}
	var seq atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := 1 + (c+i)%3
				data := make([]json.RawMessage, n)
				for j := range data {
					data[j] = json.RawMessage(fmt.Sprintf(`{"n":%d}`, j))
				}
				run := &runs.Run{ID: fmt.Sprintf("ext_%08d", seq.Add(1)), Status: runs.StatusCompleted,
					AccountID: accounts[(c+i)%len(accounts)], CreatedAt: now, CompletedAt: now, Data: data}
				if _, err := s.Settle(t.Context(), store.Settlement{Run: run, Price: credits.Micros(7 + c), Offer: "o", Platform: "p", Now: now}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	var full bytes.Buffer
	next, err := s.Backup(t.Context(), &full, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	var inc bytes.Buffer
	if _, err := s.Backup(t.Context(), &inc, next); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if inc.Len() == 0 || inc.Len() >= full.Len()+inc.Len() {
		t.Errorf("incremental backup of %d bytes beside a full one of %d", inc.Len(), full.Len())
	}

	dir1 := filepath.Join(t.TempDir(), "restored")
	if err := Restore(dir1, bytes.NewReader(full.Bytes())); err != nil {
		t.Fatal(err)
	}
	n1 := checkBalances(t, dir1, accounts)
	dir2 := filepath.Join(t.TempDir(), "restored")
	if err := Restore(dir2, bytes.NewReader(full.Bytes()), bytes.NewReader(inc.Bytes())); err != nil {
		t.Fatal(err)
	}
	n2 := checkBalances(t, dir2, accounts)
	t.Logf("%d runs settled; full backup %d bytes holds %d runs, with the incremental (%d bytes) %d", seq.Load(), full.Len(), n1, inc.Len(), n2)
	if n1 == 0 || n2 <= n1 {
		t.Errorf("restored runs: %d from the full backup, %d with the incremental; want some, then more", n1, n2)
	}
	if err := Restore(dir1, bytes.NewReader(full.Bytes())); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("restore into a store with data: %v, want ErrNotEmpty", err)
	}
	stray := t.TempDir()
	if err := os.WriteFile(filepath.Join(stray, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Restore(stray, bytes.NewReader(full.Bytes())); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("restore into a directory holding a file: %v, want ErrNotEmpty", err)
	}
	if err := Restore(t.TempDir(), io.MultiReader()); err != nil {
		t.Errorf("restore of an empty stream into an empty dir: %v", err)
	}
}
