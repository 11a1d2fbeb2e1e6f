package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	badgerstore "socialrouter/caddymodule/store/badger"
	"socialrouter/caddymodule/store/storetest"
)

// sdr runs a caddy sdr command to its end and returns its output.
func sdr(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(caddyBin, append([]string{"sdr"}, args...)...).CombinedOutput()
	return string(out), err
}

// TestBackupRestoreE2E: `caddy sdr backup` (full, then incremental) of a
// gateway under 16 concurrent callers, `caddy sdr restore` of both into a
// new store: every account's balance there is its start minus the charges
// of the runs it holds. A restore into a store with data is refused.
func TestBackupRestoreE2E(t *testing.T) {
	s := startSim(t)
	c := defaultConfig(t, s)
	c.AppExtra = "max_concurrent_runs 32"
	g := startGateway(t, c)
	const start = 5.0
	accounts := []string{"b1", "b2", "b3", "b4"}
	keys := make([]string, len(accounts))
	for i, id := range accounts {
		keys[i] = g.account(id, start)
	}
	body := map[string]any{"url": profileURL}
	var stop atomic.Bool
	var ok, calls atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 400 && !stop.Load(); n++ {
				r, err := trySend(t, "POST", g.URL+"/v1/extract/pro_net/profile.info", keys[(i+n)%len(keys)], body)
				calls.Add(1)
				if err == nil && r.Status == 200 {
					ok.Add(1)
				}
			}
		}()
	}
	dir := t.TempDir()
	full, inc := filepath.Join(dir, "full.bak"), filepath.Join(dir, "inc.bak")
	// Back up while calls settle: after a first wave, and again (the
	// incremental) after a second.
	waitServed := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for ok.Load() < n && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitServed(20)
	out, err := sdr(t, "backup", "--address", g.Admin, "--output", full)
	if err != nil {
		stop.Store(true)
		wg.Wait()
		t.Fatalf("backup: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`--since (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("backup printed no --since: %s", out)
	}
	waitServed(ok.Load() + 20)
	out2, err := sdr(t, "backup", "--address", g.Admin, "--output", inc, "--since", m[1])
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("incremental backup: %v\n%s", err, out2)
	}
	t.Logf("%d calls, %d served; %s%s", calls.Load(), ok.Load(), out, out2)

	restored := filepath.Join(dir, "restored")
	if out, err := sdr(t, "restore", "--dir", restored, "--input", full, "--input", inc); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	if out, err := sdr(t, "restore", "--dir", restored, "--input", full); err == nil || !strings.Contains(out, "not empty") {
		t.Errorf("restore into a store with data: %v\n%s", err, out)
	}
	st, err := badgerstore.Open(restored, badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runsHeld := storetest.BalancesMatchRuns(t, st, credits.Micros(start*credits.PerCredit), accounts...)
	if runsHeld < 40 {
		t.Errorf("the restored store holds %d runs, want the 40 or more served before the incremental backup", runsHeld)
	}
	t.Logf("restored store holds %d runs", runsHeld)
}

// TestBackupPostgresRefused: the admin backup of a PostgreSQL store is a
// 501 naming pg_dump, and the command fails without leaving a file.
func TestBackupPostgresRefused(t *testing.T) {
	pgURL, _ := mnEnv(t)
	url, _ := mnSchema(t, pgURL)
	c := defaultConfig(t, nil)
	c.Storage = "postgres " + url
	g := startGateway(t, c)
	if st, b := g.admin("GET", "/sdr/backup", nil); st != 501 || !strings.Contains(string(b), "pg_dump") {
		t.Errorf("GET /sdr/backup on postgres: %d %s", st, b)
	}
	outFile := filepath.Join(t.TempDir(), "pg.bak")
	if out, err := sdr(t, "backup", "--address", g.Admin, "--output", outFile); err == nil {
		t.Errorf("backup of a postgres store succeeded: %s", out)
	}
	if _, err := os.Stat(outFile); err == nil {
		t.Error("a failed backup left its output file")
	}
}
