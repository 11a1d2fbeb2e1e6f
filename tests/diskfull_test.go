package tests

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// freeBytes is what statfs says an unprivileged writer may still use on
// dir's filesystem (what the gateway's reserve check reads).
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// TestDiskFullE2E fills the store's real filesystem past the badger
// store's reserve (min_free set 1 GiB below the free space, then a 2 GiB
// file allocated beside the store): calls answer 503 store_unavailable
// (reason disk_full, Retry-After) and nothing reaches the upstream,
// readiness is 503 and the metric says disk_full; once the file is
// removed the gateway recovers by itself, calls succeed and the balance is
// exactly the start minus the answers' credits_used.
func TestDiskFullE2E(t *testing.T) {
	s := startSim(t)
	c := defaultConfig(t, s)
	dataDir := filepath.Dir(c.Storage[len("badger "):])
	const gib = 1 << 30
	reserve := freeBytes(t, dataDir) - gib
	if reserve < 64<<20 {
		t.Fatalf("the test filesystem has %d bytes free; the test needs more than 1 GiB", reserve+gib)
	}
	c.Storage += fmt.Sprintf(" {\n\t\t\tmin_free %d\n\t\t}", reserve)
	c.AppExtra = "max_concurrent_runs 32"
	g := startGateway(t, c)
	const start = 5.0
	key := g.account("acme", start)
	body := map[string]any{"url": profileURL}
	spent := 0.0
	served := func(r *response) {
		t.Helper()
		if r.Status != 200 {
			t.Errorf("extract: %d %s", r.Status, r.Body)
			return
		}
		spent += num(r.JSON["credits_used"])
	}
	served(g.do("POST", "/v1/extract/pro_net/profile.info", key, body))

	ballast := filepath.Join(dataDir, "ballast")
	f, err := os.Create(ballast)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(ballast) })
	if err := unix.Fallocate(int(f.Fd()), 0, 0, 2*gib); err != nil {
		f.Close()
		t.Fatalf("allocating 2 GiB: %v", err)
	}
	f.Close()
	time.Sleep(300 * time.Millisecond) // the store reads the free space at most every 250 ms
	s.reset(t)

	out := concurrently(g, 16, key, body)
	for _, r := range out {
		if r.Status != 503 || r.errCode() != "store_unavailable" || r.errField("reason") != "disk_full" || r.Header.Get("Retry-After") == "" {
			t.Errorf("call on a full disk: %d %s (Retry-After %q)", r.Status, r.Body, r.Header.Get("Retry-After"))
		}
	}
	if calls := s.calls(t); len(calls) != 0 {
		t.Errorf("%d upstream calls while the disk was full, want none", len(calls))
	}
	ready := g.do("GET", "/v1/health/ready", "", nil)
	if checks, _ := ready.errField("checks").(map[string]any); ready.Status != 503 || checks["store"] != "disk_full" {
		t.Errorf("readiness on a full disk: %d %s", ready.Status, ready.Body)
	}
	m := g.scrape(t)
	if m.value("sdr_store_writable", "store=badger") != 0 || m.value("sdr_store_write_blocked", "store=badger", "reason=disk_full") != 1 {
		t.Errorf("metrics on a full disk: writable %v, blocked disk_full %v", m.value("sdr_store_writable", "store=badger"),
			m.value("sdr_store_write_blocked", "store=badger", "reason=disk_full"))
	}
	if b := g.balance(key); math.Abs(b-(start-spent)) > 1e-9 {
		t.Errorf("balance %v on a full disk, want %v", b, start-spent)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for g.do("GET", "/v1/health/ready", "", nil).Status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("still not ready 10 s after space returned")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := g.do("POST", "/v1/extract/pro_net/profile.info", key, body)
			mu.Lock()
			defer mu.Unlock()
			served(r)
		}()
	}
	wg.Wait()
	if calls := s.calls(t); len(calls) == 0 {
		t.Error("no upstream call after space returned")
	}
	if m := g.scrape(t); m.value("sdr_store_writable", "store=badger") != 1 {
		t.Error("sdr_store_writable is not 1 after recovery")
	}
	if b := g.balance(key); math.Abs(b-(start-spent)) > 1e-9 {
		t.Errorf("balance %v after recovery, want start %v − Σ credits_used %v = %v", b, start, spent, start-spent)
	}
}
