package badger

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// settleRuns stores n runs of the account, created at created, each with
// records of about size bytes that compress poorly (like real profiles).
func settleRuns(t testing.TB, s *Store, account string, n, size int, created time.Time) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var ids []string
	for i := range n {
		text := make([]byte, size)
		for j := range text {
			text[j] = alphabet[rng.IntN(len(alphabet))]
		}
		id := fmt.Sprintf("ext_%s_%06d", account, i)
		r := &runs.Run{ID: id, Status: runs.StatusCompleted, Service: "profile.info", ServedBy: "source_b/pro_net",
			AccountID: account, CreatedAt: created, CompletedAt: created,
			Data: []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"about":%q}`, text))}}
		if _, err := s.Settle(t.Context(), store.Settlement{Run: r, Price: 1, Offer: "o", Platform: "p", Now: created}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// openWithAccount opens a store in a temporary directory, closed when the
// test ends, with an account "acme" created at the returned time.
func openWithAccount(t testing.TB, opts Options) (*Store, time.Time) {
	t.Helper()
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.CreateAccount(t.Context(), "acme", 1_000_000_000, created); err != nil {
		t.Fatal(err)
	}
	return s, created
}

// TestRetentionReclaimsSpace: expiring every run and reclaiming makes the
// store's directory shrink to a fraction of what the records took, and
// the runs still read, without records.
func TestRetentionReclaimsSpace(t *testing.T) {
	s, created := openWithAccount(t, Options{ValueLogFileSize: 1 << 20})
	ids := settleRuns(t, s, "acme", 300, 20<<10, created)
	full, err := s.StoredBytes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if full < 5<<20 {
		t.Fatalf("stored %d bytes for 300 runs of 20 KiB, want more than 5 MiB", full)
	}
	total := 0
	for {
		res, err := s.ExpireRuns(t.Context(), created.Add(time.Hour), created.Add(48*time.Hour), 64)
		if err != nil {
			t.Fatal(err)
		}
		total += res.Runs
		if res.Runs < 64 {
			break
		}
	}
	if total != len(ids) {
		t.Fatalf("expired %d runs, want %d", total, len(ids))
	}
	freed, err := s.Reclaim(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.StoredBytes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stored %d bytes, %d after expiring and reclaiming (freed %d)", full, after, freed)
	if after > full/3 || freed <= 0 {
		t.Errorf("stored %d bytes after reclaiming (freed %d), want at most a third of %d", after, freed, full)
	}
	r, err := s.GetRun(t.Context(), "acme", ids[7])
	if err != nil || !r.RecordsExpired || len(r.Data) != 0 || r.Pagination.Returned != 1 {
		t.Errorf("run after GC: %+v, %v", r, err)
	}
}

// TestRetentionBackfill: runs stored without an expiry index entry (by a
// gateway before retention existed) are indexed once and then expire.
func TestRetentionBackfill(t *testing.T) {
	s, created := openWithAccount(t, Options{})
	ids := settleRuns(t, s, "acme", 30, 100, created)
	// As an older gateway left them: no index, no marker.
	if err := s.db.DropPrefix([]byte{pExpiry}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(txn *bdb.Txn) error {
		if _, err := txn.Get(indexedMarker); err == nil {
			t.Error("marker set before any retention pass")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	total, calls := 0, 0
	for more := true; more; calls++ {
		res, err := s.ExpireRuns(t.Context(), created.Add(time.Hour), created.Add(time.Hour), 1) // backfills 8 runs a call
		if err != nil {
			t.Fatal(err)
		}
		total += res.Runs
		more = res.More
	}
	if calls < 4 {
		t.Errorf("backfill of 30 runs 8 at a time said it was done after %d calls", calls)
	}
	for range 20 {
		res, err := s.ExpireRuns(t.Context(), created.Add(time.Hour), created.Add(time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		total += res.Runs
	}
	if total != len(ids) || !s.expiryIndexed.Load() {
		t.Errorf("expired %d of %d runs (indexed: %v)", total, len(ids), s.expiryIndexed.Load())
	}
}

// TestSettlesDuringCompaction: the compaction that Reclaim forces blocks
// badger's writes for a moment (DropPrefix); settles under way wait for
// it instead of failing.
func TestSettlesDuringCompaction(t *testing.T) {
	s, created := openWithAccount(t, Options{ValueLogFileSize: 1 << 20})
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := &runs.Run{ID: fmt.Sprintf("ext_c%06d", i), Status: runs.StatusCompleted, AccountID: "acme",
				CreatedAt: created, CompletedAt: created, Data: []json.RawMessage{json.RawMessage(`{"a":1}`)}}
			if _, err := s.Settle(t.Context(), store.Settlement{Run: r, Price: 1, Offer: "o", Platform: "p", Now: created}); err != nil {
				t.Errorf("settle %d during compaction: %v", i, err)
				return
			}
			n++
		}
	}()
	for range 5 {
		if err := s.compact(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	if n := <-done; n == 0 {
		t.Error("no settle ran during the compactions")
	}
}
