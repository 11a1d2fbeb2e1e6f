package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The cache phase (issue 36, `bench/cache.go`): the freshness cache under
// a Zipf-distributed workload. -cache-calls calls of pro_net/profile.info
// with Cache-Control: max-age=3600 over 1,000 inputs, the input of each
// drawn from a Zipf distribution (s 1.1), from -c workers; every upstream
// job takes 10 s of upstream time in a simulator at -cache-scale. Printed:
// the hit ratio (records served from the cache or from joined work), p50
// and p99 of hits and of misses, upstream jobs per 1,000 records served,
// and the gateway's CPU per cached record over its CPU per GET
// /v1/extractions/{id} of the same record, in interleaved rounds.

const (
	cacheInputs  = 1000
	cacheJobSecs = 10
)

// cacheInput is the i-th input of the workload.
func cacheInput(i int) string { return fmt.Sprintf("https://www.linkedin.com/in/zipf-%d", i) }

// cachePhase runs the phase in a fresh simulator and gateway.
func (rep *report) cachePhase(ctx context.Context, tmp string, cfg *config) error {
	w := rep.section("13")
	dir := filepath.Join(tmp, "cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	e, err := startCacheEnv(ctx, dir, cfg)
	if err != nil {
		return err
	}
	defer e.sim.stop()
	defer e.gw.stop()

	calls := zipfLoad(ctx, e, cfg.conc, cfg.cacheCalls)
	var hits, misses []time.Duration
	records, failed := 0, 0
	hitRun := ""
	for _, c := range calls {
		switch {
		case !c.ok:
			failed++
		case c.cached:
			hits = append(hits, c.took)
			records++
			if c.rank == 1 && hitRun == "" {
				hitRun = c.runID
			}
		default:
			misses = append(misses, c.took)
			records++
		}
	}
	slices.Sort(hits)
	slices.Sort(misses)
	jobs, err := e.ledgerJobs(ctx, benchDataset)
	if err != nil {
		return err
	}
	ratio := float64(len(hits)) / float64(max(1, len(hits)+len(misses)))
	perK := float64(jobs) * 1000 / float64(max(1, records))
	hitP50 := ms(percentile(hits, 0.5))
	fmt.Fprintf(w, "13. Freshness cache: %d calls of pro_net/profile.info, Cache-Control: max-age=3600, over %d inputs drawn from\n", len(calls), cacheInputs)
	fmt.Fprintf(w, "    a Zipf distribution (s 1.1), %d workers; each upstream job %d s of upstream time (simulator -time-scale %g: %.2f s)\n",
		cfg.conc, cacheJobSecs, cfg.cacheScale, cacheJobSecs*cfg.cacheScale)
	fmt.Fprintf(w, "    hit ratio %.1f %% (%d hits or joins, %d misses, %d failed)\n", 100*ratio, len(hits), len(misses), failed)
	fmt.Fprintf(w, "    hits   p50 %7.1f ms  p99 %7.1f ms   target p50 ≤ 10 ms  %s\n", hitP50, ms(percentile(hits, 0.99)), mark(hitP50 <= 10))
	fmt.Fprintf(w, "    misses p50 %7.1f ms  p99 %7.1f ms\n", ms(percentile(misses, 0.5)), ms(percentile(misses, 0.99)))
	fmt.Fprintf(w, "    upstream jobs per 1,000 records served: %.0f (%d jobs, %d records; 1,000 without the cache)\n", perK, jobs, records)
	rep.check("cache: hit p50", fmt.Sprintf("%.1f ms", hitP50), "≤ 10 ms", hitP50 <= 10)
	rep.info("cache: hit ratio (Zipf 1.1 over 1,000 inputs)", fmt.Sprintf("%.1f %%", 100*ratio), fmt.Sprintf("%.0f upstream jobs per 1,000 records", perK))
	if hitRun == "" {
		fmt.Fprintln(w, "    (no hit of the hottest input: no CPU comparison)")
		fmt.Fprintln(w)
		return nil
	}

	hot := e.cachedTarget(cacheInput(0))
	get := e.runTarget()
	get.url = e.gwURL + "/v1/extractions/" + hitRun
	a, b, err := e.pair(ctx, cfg, hot, get, cfg.rounds, cfg.round, "cache")
	if err != nil {
		return err
	}
	cpuRatio := a.cpuPerReq["gateway"] / b.cpuPerReq["gateway"]
	fmt.Fprintf(w, "    gateway CPU per cached record %.0f µs (%.0f req/s, p50 %.1f ms) vs GET /v1/extractions/{id} of it %.0f µs (%.0f req/s)\n",
		a.cpuPerReq["gateway"], a.rps, a.p50, b.cpuPerReq["gateway"], b.rps)
	fmt.Fprintf(w, "    ratio %.2f ×   target ≤ 1.5 ×  %s   (%d rounds of %s each, interleaved)\n", cpuRatio, mark(cpuRatio <= 1.5), cfg.rounds, cfg.round)
	if dirty, clean, err := syncCost(tmp, 200); err == nil {
		// A hit is billed and its run stored before the answer: one synced
		// badger commit (two msyncs) shared by the callers it carries, at
		// most the load generator's connections.
		floor := 2 * float64(dirty.Microseconds()) / float64(cfg.conc)
		fmt.Fprintf(w, "    this machine's durable write: msync of a written page %d µs CPU, of a clean one %d µs; a badger commit syncs\n", dirty.Microseconds(), clean.Microseconds())
		fmt.Fprintf(w, "    two files, so with %d callers sharing every commit a hit pays ≥ %.0f µs of syncs alone: (GET + that) ÷ GET = %.2f ×\n",
			cfg.conc, floor, (b.cpuPerReq["gateway"]+floor)/b.cpuPerReq["gateway"])
	}
	fmt.Fprintln(w)
	rep.check("cache: CPU per cached record / GET of the run", fmt.Sprintf("%.2f ×", cpuRatio), "≤ 1.5 ×", cpuRatio <= 1.5)
	if cfg.profileDir == "" {
		return nil
	}
	// With -profile-dir: where a hit's CPU goes, and the GET's, outside
	// the measured rounds (cache-hit-cpu.pb.gz, cache-get-cpu.pb.gz).
	secs := max(int(cfg.profile.Seconds()), 1)
	for _, p := range []struct {
		name, title string
		t           *target
	}{
		{"cache-hit", "cached POST /v1/extract/pro_net/profile.info of the hottest input", hot},
		{"cache-get", "GET /v1/extractions/{id} of its record", get},
	} {
		if err := rep.profileOne(ctx, w, e, cfg, profileDir(cfg, tmp), p.name, p.title, p.t, secs, 25, 45); err != nil {
			return err
		}
	}
	return nil
}

// startCacheEnv starts a time-scaled simulator whose profile jobs take
// cacheJobSecs, and a gateway with the bench account.
func startCacheEnv(ctx context.Context, dir string, cfg *config) (*env, error) {
	e := &env{dir: dir, client: newClient(cfg.conc)}
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	a, b := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	e.simA, e.simB = "http://"+a, "http://"+b
	sim, err := startChild("upstream-sim", filepath.Join(dir, "sim.log"), nil, cfg.simBin,
		"-a", a, "-b", b, "-latency", "0", "-time-scale", fmt.Sprint(cfg.cacheScale))
	if err != nil {
		return nil, err
	}
	e.sim = sim
	if err := waitHTTP(ctx, sim, e.simA+"/_sim/health"); err != nil {
		return nil, err
	}
	d := caddyfileData{
		Admin: ports[2], GW: ports[3], Ref: ports[4], Static: ports[5],
		Services: cfg.services, Data: filepath.Join(dir, "badger"),
		SimA: e.simA, SimB: e.simB, SimBHost: b, Catalogue: "()", Run: "()",
	}
	e.addresses(d)
	if err := e.startGateway(ctx, cfg, d, "caddy-cache.log"); err != nil {
		return nil, err
	}
	if err := e.createAccount(ctx); err != nil {
		return nil, err
	}
	body, _ := json.Marshal(map[string]any{"target": benchDataset, "duration_s": cacheJobSecs})
	if st, rb, err := e.post(ctx, e.simA+"/_sim/faults", body); err != nil || st >= 300 {
		return nil, fmt.Errorf("setting the job length on the simulator: %d %v %s", st, err, clip(rb))
	}
	return e, nil
}

// cachedTarget is the profile.info call of input with max-age=3600.
func (e *env) cachedTarget(input string) *target {
	h := jsonHeader()
	h.Set("Authorization", "Bearer "+e.key)
	h.Set("Cache-Control", "max-age=3600")
	return &target{name: "cached extract", method: http.MethodPost, url: e.gwURL + "/v1/extract/pro_net/profile.info",
		body: []byte(`{"url":"` + input + `"}`), header: h}
}

// zipfCall is one call of the Zipf workload.
type zipfCall struct {
	rank       int // 1 the hottest input
	ok, cached bool
	took       time.Duration
	runID      string
}

// zipfLoad makes n calls from conc workers, each of an input drawn from a
// Zipf distribution over cacheInputs.
func zipfLoad(ctx context.Context, e *env, conc, n int) []zipfCall {
	out := make([]zipfCall, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for wk := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			z := rand.NewZipf(rand.New(rand.NewSource(int64(wk)+1)), 1.1, 1, cacheInputs-1)
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				k := int(z.Uint64())
				out[i] = e.zipfCall(ctx, k)
			}
		}()
	}
	wg.Wait()
	return out
}

// zipfCall makes the call of input k.
func (e *env) zipfCall(ctx context.Context, k int) zipfCall {
	t := e.cachedTarget(cacheInput(k))
	c := zipfCall{rank: k + 1}
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, bytes.NewReader(t.body))
	if err != nil {
		return c
	}
	req.Header = t.header
	start := time.Now()
	resp, err := e.client.Do(req)
	if err != nil {
		return c
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.took = time.Since(start)
	var run struct {
		ID            string `json:"id"`
		CachedRecords int    `json:"cached_records"`
	}
	c.ok = resp.StatusCode == http.StatusOK && json.Unmarshal(b, &run) == nil
	c.cached, c.runID = run.CachedRecords > 0, run.ID
	return c
}

// ledgerJobs counts the simulator's jobs of target.
func (e *env) ledgerJobs(ctx context.Context, target string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.simA+"/_sim/ledger", nil)
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var jobs []struct {
		Target string `json:"target"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jobs); err != nil {
		return 0, fmt.Errorf("reading the simulator's ledger: %v", err)
	}
	n := 0
	for _, j := range jobs {
		if j.Target == target {
			n++
		}
	}
	return n, nil
}
