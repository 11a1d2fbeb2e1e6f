package badger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// apiRun is what a test reads of a run's API form.
type apiRun struct {
	ID             string            `json:"id"`
	Data           []json.RawMessage `json:"data"`
	RecordsExpired bool              `json:"records_expired"`
}

func readRunJSON(t *testing.T, s *Store, account, id string) ([]byte, apiRun) {
	t.Helper()
	b, err := s.GetRunJSON(t.Context(), nil, account, id)
	if err != nil {
		t.Fatalf("GetRunJSON %s: %v", id, err)
	}
	var r apiRun
	if err := json.Unmarshal(b, &r); err != nil || r.ID != id {
		t.Fatalf("GetRunJSON %s = %.80s (%v)", id, b, err)
	}
	return b, r
}

// TestRunCacheServesAsStored: a run read again comes from memory, the
// same bytes as read from badger, after a prefix in dst; another
// account's read of the id is not found, cached or not; the cache is
// off with a negative bound.
func TestRunCacheServesAsStored(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bound  int
		cached int
	}{
		{"default bound", 0, 3},
		{"cache off", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, created := openWithAccount(t, Options{RunCacheBytes: tc.bound})
			if _, err := s.CreateAccount(t.Context(), "other", 1_000_000, created); err != nil {
				t.Fatal(err)
			}
			ids := settleRuns(t, s, "acme", 3, 2000, created)
			for _, id := range ids {
				first, _ := readRunJSON(t, s, "acme", id)
				again, err := s.GetRunJSON(t.Context(), []byte("kept:"), "acme", id)
				if err != nil || !bytes.Equal(again, append([]byte("kept:"), first...)) {
					t.Fatalf("second read of %s = %.40q, %v; want the first read after the prefix", id, again, err)
				}
				if b, err := s.GetRunJSON(t.Context(), nil, "other", id); err == nil {
					t.Fatalf("another account read %s: %.40s", id, b)
				}
			}
			if n := cachedRuns(s); n != tc.cached {
				t.Errorf("%d runs cached, want %d", n, tc.cached)
			}
		})
	}
}

func cachedRuns(s *Store) int {
	if s.runs == nil {
		return 0
	}
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	return s.runs.items.len()
}

// TestRunCacheExpiry: a retention pass drops the runs it expires from the
// cache, so the next read has no records, also while readers fill the
// cache during the pass; runs the pass left alone stay cached.
func TestRunCacheExpiry(t *testing.T) {
	s, created := openWithAccount(t, Options{})
	old := settleRuns(t, s, "acme", 20, 500, created)
	if _, err := s.CreateAccount(t.Context(), "later", 1_000_000, created); err != nil {
		t.Fatal(err)
	}
	kept := settleRuns(t, s, "later", 2, 500, created.Add(2*time.Hour))
	for _, id := range old {
		if _, r := readRunJSON(t, s, "acme", id); len(r.Data) != 1 || r.RecordsExpired {
			t.Fatalf("run %s before expiry: %+v", id, r)
		}
	}
	keptBytes, _ := readRunJSON(t, s, "later", kept[0])

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.GetRunJSON(t.Context(), nil, "acme", old[j%len(old)]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for {
		res, err := s.ExpireRuns(t.Context(), created.Add(time.Hour), created.Add(48*time.Hour), 7)
		if err != nil {
			t.Fatal(err)
		}
		if res.Runs == 0 {
			break
		}
	}
	for _, id := range old {
		if _, r := readRunJSON(t, s, "acme", id); len(r.Data) != 0 || !r.RecordsExpired {
			t.Errorf("run %s read during and after its expiry: %d records, records_expired %v", id, len(r.Data), r.RecordsExpired)
		}
	}
	close(stop)
	wg.Wait()
	for _, id := range old {
		if _, r := readRunJSON(t, s, "acme", id); len(r.Data) != 0 || !r.RecordsExpired {
			t.Errorf("run %s once the readers stopped: %d records", id, len(r.Data))
		}
	}
	if b, _ := readRunJSON(t, s, "later", kept[0]); !bytes.Equal(b, keptBytes) {
		t.Errorf("a run retention left alone reads %.80s, was %.80s", b, keptBytes)
	}
}

// TestRunCacheRestore: a store restored from a backup serves the runs as
// they were backed up, not as the store they came from cached them since
// (expired there after the backup).
func TestRunCacheRestore(t *testing.T) {
	s, created := openWithAccount(t, Options{})
	ids := settleRuns(t, s, "acme", 4, 500, created)
	before := map[string][]byte{}
	for _, id := range ids {
		before[id], _ = readRunJSON(t, s, "acme", id)
	}
	var backup bytes.Buffer
	if _, err := s.Backup(t.Context(), &backup, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExpireRuns(t.Context(), created.Add(time.Hour), created.Add(48*time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	if err := Restore(dir, &backup); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, id := range ids {
		if got, _ := readRunJSON(t, r, "acme", id); !bytes.Equal(got, before[id]) {
			t.Errorf("restored run %s reads %.80s, was backed up as %.80s", id, got, before[id])
		}
		if _, run := readRunJSON(t, s, "acme", id); !run.RecordsExpired {
			t.Errorf("run %s in the original store: not expired", id)
		}
	}
}

// TestRunCacheFill: a read fills the cache only if no run write began or
// ended while it read; the bytes stay within the bound, least recently
// used runs evicted first, and a run above an eighth of it is not kept.
func TestRunCacheFill(t *testing.T) {
	doc := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	for _, tc := range []struct {
		name string
		run  func(c *runCache) // fills a, b, c… in some order
		want string            // the refs' ids cached, most recent first
	}{
		{"plain fills", func(c *runCache) {
			c.fill(c.token(), runRef{"acct", "a"}, doc(100))
			c.fill(c.token(), runRef{"acct", "b"}, doc(100))
		}, "[b a]"},
		{"a write began and ended during the read", func(c *runCache) {
			tok := c.token()
			c.beginWrite()
			c.endWrite(nil)
			c.fill(tok, runRef{"acct", "a"}, doc(100))
		}, "[]"},
		{"a write in flight", func(c *runCache) {
			c.beginWrite()
			c.fill(c.token(), runRef{"acct", "a"}, doc(100))
		}, "[]"},
		{"a write drops its runs", func(c *runCache) {
			c.fill(c.token(), runRef{"acct", "a"}, doc(100))
			c.fill(c.token(), runRef{"acct", "b"}, doc(100))
			c.beginWrite()
			c.drop(runRef{"acct", "a"})
			c.endWrite([]runRef{{"acct", "a"}})
		}, "[b]"},
		{"the bound evicts the least recently used", func(c *runCache) {
			for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
				c.fill(c.token(), runRef{"acct", id}, doc(250)) // 2000 bytes: the bound
			}
			c.appendTo(nil, runRef{"acct", "a"}) // a used: b is the oldest
			c.fill(c.token(), runRef{"acct", "i"}, doc(250))
		}, "[i a h g f e d c]"},
		{"too large for the bound", func(c *runCache) {
			c.fill(c.token(), runRef{"acct", "a"}, doc(251))
		}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newRunCache(2000)
			tc.run(c)
			var ids []string
			total := 0
			for e := c.items.ring.next; e != &c.items.ring; e = e.next {
				ids = append(ids, e.key.id)
				total += len(e.val)
			}
			if got := fmt.Sprint(ids); got != tc.want {
				t.Errorf("cached %s, want %s", got, tc.want)
			}
			if total != c.bytes || c.bytes > c.max {
				t.Errorf("cache counts %d bytes, holds %d, bound %d", c.bytes, total, c.max)
			}
		})
	}
}

// TestRunCacheClosed: a closed store serves no run from memory, cached
// before or read while it closed: the read fails as badger's does, and a
// fill begun before the close keeps nothing.
func TestRunCacheClosed(t *testing.T) {
	s, created := openWithAccount(t, Options{})
	ids := settleRuns(t, s, "acme", 2, 2000, created)
	readRunJSON(t, s, "acme", ids[0]) // cached
	tok := s.runs.token()             // a read in flight across the close
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.runs.fill(tok, runRef{"acme", ids[1]}, []byte(`{"id":"late"}`))
	if n := cachedRuns(s); n != 0 {
		t.Errorf("%d runs cached after Close, want 0", n)
	}
	for _, id := range ids {
		if b, err := s.GetRunJSON(t.Context(), nil, "acme", id); err == nil {
			t.Errorf("closed store served %s: %.60s", id, b)
		}
	}
}
