package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"socialrouter/caddymodule/registry"
)

// report collects the figures of each phase in its numbered section (the
// numbers of the issue) and prints them in order at the end.
type report struct {
	cfg       *config
	catalogue []byte
	targets   []targetRow
	rssKiB    int64 // gateway VmHWM right after the end-to-end rounds
	rssParts  string
	heap      string
	sections  map[string]*bytes.Buffer
	reserve   []reserveFigures // the reservation step per store and path (settle phase)
	e2eCPU    map[int]float64  // gateway process CPU µs per call at N records (end-to-end phase)
	pgE2E     *pgE2EFigures    // the N = 1 call through a gateway on PostgreSQL (pg-e2e phase)
	// coreTime is how long the phases before the load phases took
	// (provision … profile): what the 6-minute target is about.
	coreTime time.Duration
}

// sectionOrder is the printing order of the sections.
var sectionOrder = []string{"0", "1", "1p", "2", "3", "4", "5a", "5b", "7", "8", "10", "11", "12", "async", "13", "6", "6b", "9"}

// section returns the buffer of one section.
func (rep *report) section(key string) *bytes.Buffer {
	if rep.sections == nil {
		rep.sections = map[string]*bytes.Buffer{}
	}
	b, ok := rep.sections[key]
	if !ok {
		b = new(bytes.Buffer)
		rep.sections[key] = b
	}
	return b
}

// flush prints every section written so far, in order.
func (rep *report) flush() {
	for _, k := range sectionOrder {
		if b, ok := rep.sections[k]; ok {
			os.Stdout.Write(b.Bytes())
		}
	}
	rep.sections = nil
}

// targetRow is one figure held against its target.
type targetRow struct {
	what, figure, target string
	ok                   bool
	info                 bool // a figure printed beside another, with no target
}

func (rep *report) check(what, figure, target string, ok bool) {
	rep.targets = append(rep.targets, targetRow{what: what, figure: figure, target: target, ok: ok})
}

// info adds a figure the summary prints with a note instead of a target.
func (rep *report) info(what, figure, note string) {
	rep.targets = append(rep.targets, targetRow{what: what, figure: figure, target: note, info: true})
}

func mark(ok bool) string {
	if ok {
		return "OK"
	}
	return "BELOW"
}

func (rep *report) header() {
	w := rep.section("0")
	cfg := rep.cfg
	fmt.Fprintf(w, "Social Data Router — make bench, %s, %s/%s, %d CPUs (GOMAXPROCS %d), %s\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), goVersion())
	fmt.Fprintf(w, "CAVEAT: the load generator, the gateway and the simulator share the %d CPU cores of this\n", runtime.NumCPU())
	fmt.Fprintln(w, "machine (with whatever else runs on it), so absolute req/s are low and noisy; the ratios to")
	fmt.Fprintln(w, "references measured in the same run, with the same load generator, interleaved, are the figures.")
	fmt.Fprintf(w, "Method: %d rounds per figure (%d end-to-end), interleaved A B A B …, medians printed; %d keep-alive connections;\n", cfg.rounds, cfg.e2eRounds, cfg.conc)
	fmt.Fprintf(w, "rounds of %s (end-to-end), %s (look-ups), %s (settles), at most %d requests each.\n",
		cfg.round, cfg.lookupRound, cfg.settleRound, cfg.max)
	fmt.Fprintf(w, "Load average at the start: %s (other work on the machine competes for the same cores).\n\n", loadavg())
}

// provision times registry.Load of the whole services/ tree in process.
func (rep *report) provision(ctx context.Context, cfg *config) error {
	w := rep.section("5a")
	const loads = 5
	var times []float64
	var reg *registry.Registry
	for i := 0; i < loads && ctx.Err() == nil; i++ {
		t0 := time.Now()
		r, err := registry.Load(cfg.services)
		if err != nil {
			return err
		}
		times = append(times, float64(time.Since(t0))/float64(time.Millisecond))
		reg = r
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rep.catalogue = reg.CatalogueJSON()
	offers := 0
	for _, s := range reg.Services {
		offers += len(s.Offers)
	}
	med := median(times)
	sorted := append([]float64(nil), times...)
	sort.Float64s(sorted)
	fmt.Fprintln(w, "5a. Provision: registry.Load(services/) — CUE + schemas, input regexes, jq programs, views, OpenAPI")
	fmt.Fprintf(w, "    %d services, %d offers, %d loads in process: median %.0f ms (min %.0f, max %.0f; first %.0f)   target ≤ 1000 ms  %s\n\n",
		len(reg.Services), offers, len(times), med, sorted[0], sorted[len(sorted)-1], times[0], mark(med <= 1000))
	rep.check("provision: registry.Load(services/)", fmt.Sprintf("%.0f ms", med), "≤ 1000 ms", med <= 1000)
	runtime.GC()
	return nil
}

// settles measures badger, and PostgreSQL when SDR_TEST_POSTGRES_URL is set.
func (rep *report) settles(ctx context.Context, tmp string, cfg *config) error {
	w := rep.section("3")
	logf("settle: badger")
	figs, res, err := benchBadgerSettles(ctx, tmp, *cfg)
	if err != nil {
		return err
	}
	rep.reserve = append(rep.reserve, res...)
	pgNote := "SDR_TEST_POSTGRES_URL is not set: PostgreSQL not measured"
	if url := os.Getenv("SDR_TEST_POSTGRES_URL"); url != "" {
		logf("settle: postgres")
		pg, res, setup, err := benchPostgresSettles(ctx, url, *cfg)
		if err != nil {
			return fmt.Errorf("postgres: %v", err)
		}
		rep.reserve = append(rep.reserve, res...)
		figs = append(figs, pg...)
		pgNote = "PostgreSQL: SDR_TEST_POSTGRES_URL on this machine, fresh schema dropped afterwards, " + setup
	}
	fmt.Fprintf(w, "3. Settle: settles/s of one completed run (%d distinct fixture records, %d B in all, price %s), fsync on every commit\n",
		settleRecords, settleDataBytes(), settlePrice)
	fmt.Fprintln(w, "   (badger SyncWrites=true, the production default; PostgreSQL synchronous_commit as configured),")
	fmt.Fprintln(w, "   callers on separate accounts (own key each) vs every caller on ONE account (one key)")
	fmt.Fprintf(w, "    %-9s %7s  %12s  %12s  %9s   %s\n", "store", "callers", "separate/s", "one acct/s", "one/sep", "targets: one/sep ≥ 0.90; ≥ 3000/s at 32 callers")
	for _, f := range figs {
		ratio := f.hot / f.separate
		extra := ""
		if f.callers == 32 {
			extra = fmt.Sprintf("  one acct %s", mark(f.hot >= 3000))
			rep.check(fmt.Sprintf("settle %s, 32 callers, one account", f.store), fmt.Sprintf("%.0f/s", f.hot), "≥ 3000/s", f.hot >= 3000)
			rep.check(fmt.Sprintf("settle %s, 32 callers, separate accounts", f.store), fmt.Sprintf("%.0f/s", f.separate), "≥ 3000/s", f.separate >= 3000)
		}
		rep.check(fmt.Sprintf("settle %s, %d callers, one/separate", f.store, f.callers), fmt.Sprintf("%.2f ×", ratio), "≥ 0.90 ×", ratio >= 0.9)
		fmt.Fprintf(w, "    %-9s %7d  %12.0f  %12.0f  %8.2f×   ratio %s%s   rounds sep %s, one %s\n",
			f.store, f.callers, f.separate, f.hot, ratio, mark(ratio >= 0.9), extra, fmtRounds(f.sepRounds), fmtRounds(f.hotRounds))
	}
	fmt.Fprintf(w, "    %s\n", pgNote)
	fmt.Fprintln(w, "    per settle, in this process over all rounds of a row (the bench settles in process), and the CPU of the PostgreSQL backends serving it:")
	for _, f := range figs {
		if f.usageOK {
			srv := ""
			if f.serverOK {
				srv = fmt.Sprintf("; PostgreSQL backends %5.0f µs", f.serverUS)
			}
			if f.perGroup > 0 {
				srv += fmt.Sprintf("; %.1f settles per group transaction", f.perGroup)
			}
			fmt.Fprintf(w, "    %-9s %7d callers: CPU %5.0f µs user + %5.0f µs system%s; %6.0f B written to storage (fsync, msync, writeback)\n",
				f.store, f.callers, f.userUS, f.sysUS, srv, f.written)
		}
	}
	fmt.Fprintln(w)
	return nil
}

func fmtRounds(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, "/")
}

// endToEnd measures the extraction against reverse_proxy at N = 10 and 1.
func (rep *report) endToEnd(ctx context.Context, e *env, cfg *config) error {
	w := rep.section("1")
	type result struct {
		n    int
		a, b summary
	}
	var results []result
	for _, n := range []int{10, 1} {
		if err := e.setItems(ctx, n); err != nil {
			return err
		}
		// One checked call of each: the gateway answers n records, the
		// proxy the same raw payload.
		if err := e.checkPayloads(ctx, n); err != nil {
			return err
		}
		a, b, err := e.pair(ctx, cfg, e.extractTarget(n), e.proxyTarget(n), cfg.e2eRounds, cfg.round, fmt.Sprintf("e2e N=%d", n))
		if err != nil {
			return err
		}
		results = append(results, result{n, a, b})
	}
	pid := e.gw.cmd.Process.Pid
	rep.rssKiB = memKiB(pid, "VmHWM")
	rep.rssParts = fmt.Sprintf("resident then: %.0f MiB = %.0f MiB anonymous (Go heap and runtime) + %.0f MiB file-backed (badger's mmapped files)",
		float64(memKiB(pid, "VmRSS"))/1024, float64(memKiB(pid, "RssAnon"))/1024, float64(memKiB(pid, "RssFile"))/1024)
	if ms, err := memstats(ctx, "http://"+e.admin); err == nil {
		rep.rssParts += fmt.Sprintf("\n    Go runtime then: %.0f MiB obtained from the OS, heap %.0f MiB in use, %.0f MiB idle and not yet returned; %d GC cycles so far",
			float64(ms.Sys)/(1<<20), float64(ms.HeapInuse)/(1<<20), float64(ms.HeapIdle-ms.HeapReleased)/(1<<20), ms.NumGC)
	}
	rep.heapSnapshot(ctx, e, cfg)

	fmt.Fprintln(w, "1. End-to-end: POST /v1/extract/pro_net/profile.posts (limit 10) at N=10 and pro_net/profile.info at N=1 through the gateway (auth, rate limiter,")
	fmt.Fprintln(w, "   validation, simulator with no added latency, normalization, settle on badger with fsync)")
	fmt.Fprintln(w, "   vs Caddy's reverse_proxy to the same simulator endpoint returning the same raw payload")
	fmt.Fprintf(w, "    %-16s %9s %9s %9s %9s  %s\n", "", "req/s", "p50 ms", "p99 ms", "bytes/req", "CPU µs/req: gateway process, simulator, load generator")
	for _, r := range results {
		for _, s := range []summary{r.a, r.b} {
			fmt.Fprintf(w, "    N=%-2d %-11s %9.0f %9.2f %9.2f %9.0f  %6.0f %6.0f %6.0f   rounds %s%s\n",
				r.n, s.name, s.rps, s.p50, s.p99, s.bytesPerReq,
				s.cpuPerReq["gateway"], s.cpuPerReq["sim"], s.cpuPerReq["loadgen"], fmtRounds(s.rounds), failures(s))
		}
		ratio := r.a.rps / r.b.rps
		// CPU targets of issue 38 (issue 16 asked 2.5 and 2.0 ×, not met
		// since: round 12 in docs/perf-log.md).
		want, wantCPU := 0.5, 3.0
		if r.n == 1 {
			want, wantCPU = 0.8, 2.8
		}
		// CPU per call of the Caddy process: the gateway's path against
		// reverse_proxy's in the same process; it moves less than req/s.
		cpu := r.a.cpuPerReq["gateway"] / r.b.cpuPerReq["gateway"]
		if rep.e2eCPU == nil {
			rep.e2eCPU = map[int]float64{}
		}
		rep.e2eCPU[r.n] = r.a.cpuPerReq["gateway"]
		fmt.Fprintf(w, "    N=%-2d gateway/reverse_proxy req/s %.2f ×  target ≥ %.1f ×  %s;  CPU µs per call %.0f / %.0f = %.2f ×  target ≤ %.1f ×  %s\n",
			r.n, ratio, want, mark(ratio >= want), r.a.cpuPerReq["gateway"], r.b.cpuPerReq["gateway"], cpu, wantCPU, mark(cpu <= wantCPU))
		fmt.Fprintf(w, "    N=%-2d added latency p50 %+.2f ms, p99 %+.2f ms\n", r.n, r.a.p50-r.b.p50, r.a.p99-r.b.p99)
		rep.check(fmt.Sprintf("e2e N=%d gateway/reverse_proxy req/s", r.n), fmt.Sprintf("%.2f ×", ratio), fmt.Sprintf("≥ %.1f ×", want), ratio >= want)
		rep.check(fmt.Sprintf("e2e N=%d gateway/reverse_proxy CPU µs per call", r.n), fmt.Sprintf("%.2f ×", cpu), fmt.Sprintf("≤ %.1f ×", wantCPU), cpu <= wantCPU)
	}
	fmt.Fprintln(w)
	return nil
}

func failures(s summary) string {
	if s.failed == 0 {
		return ""
	}
	return fmt.Sprintf("   %d FAILED (first: %s)", s.failed, s.firstErr)
}

// checkPayloads makes one call of each end-to-end target and checks that
// both carry n records.
func (e *env) checkPayloads(ctx context.Context, n int) error {
	st, body, err := e.extractTarget(n).fetch(ctx, e.client)
	var run struct {
		Data []json.RawMessage `json:"data"`
	}
	if err != nil || st != http.StatusOK || json.Unmarshal(body, &run) != nil || len(run.Data) != n {
		return fmt.Errorf("gateway at N=%d: %d, %d records, %v: %s", n, st, len(run.Data), err, clip(body))
	}
	st, body, err = e.proxyTarget(n).fetch(ctx, e.client)
	var items []json.RawMessage
	if err != nil || st != http.StatusOK || json.Unmarshal(body, &items) != nil || len(items) != n {
		return fmt.Errorf("reverse_proxy at N=%d: %d, %d items, %v: %s", n, st, len(items), err, clip(body))
	}
	return nil
}

// lookups measures the catalogue and a stored run against static respond.
func (rep *report) lookups(ctx context.Context, e *env, cfg *config) error {
	w := rep.section("4")
	fmt.Fprintln(w, "4. Look-ups vs Caddy's static respond of a body of the same size (same process, same client)")
	fmt.Fprintf(w, "    %-26s %9s %9s %9s %9s  %s\n", "", "req/s", "p50 ms", "p99 ms", "bytes/req", "CPU µs/req: gateway process, load generator")
	for _, c := range []struct {
		a, b *target
	}{
		{e.servicesTarget(), e.staticTarget("/services")},
		{e.runTarget(), e.staticTarget("/run")},
	} {
		a, b, err := e.pair(ctx, cfg, c.a, c.b, cfg.rounds, cfg.lookupRound, "look-up "+c.a.name)
		if err != nil {
			return err
		}
		for _, s := range []summary{a, b} {
			fmt.Fprintf(w, "    %-26s %9.0f %9.2f %9.2f %9.0f  %6.0f %6.0f   rounds %s%s\n",
				s.name, s.rps, s.p50, s.p99, s.bytesPerReq, s.cpuPerReq["gateway"], s.cpuPerReq["loadgen"], fmtRounds(s.rounds), failures(s))
		}
		ratio := a.rps / b.rps
		want := 0.7
		if c.a.name == e.runTarget().name {
			want = 0.95 // issue 38: the stored bytes served as stored
		}
		fmt.Fprintf(w, "    %-26s %.2f ×  target ≥ %.2f ×  %s\n", "ratio to respond", ratio, want, mark(ratio >= want))
		rep.check(a.name+" / respond req/s", fmt.Sprintf("%.2f ×", ratio), fmt.Sprintf("≥ %.2f ×", want), ratio >= want)
	}
	fmt.Fprintln(w)
	return nil
}

// memory prints the gateway's peak RSS.
func (rep *report) memory(e *env) {
	w := rep.section("5b")
	pid := e.gw.cmd.Process.Pid
	end := memKiB(pid, "VmHWM")
	fmt.Fprintln(w, "5b. Memory: gateway peak RSS (VmHWM of /proc/<pid>/status; one process serving the gateway and both references)")
	if rep.rssKiB > 0 {
		mib := float64(rep.rssKiB) / 1024
		fmt.Fprintf(w, "    after the end-to-end rounds %.0f MiB   target ≤ 150 MiB  %s;  at the end of the run %.0f MiB, now resident %.0f MiB\n",
			mib, mark(mib <= 150), float64(end)/1024, float64(memKiB(pid, "VmRSS"))/1024)
		rep.check("gateway peak RSS under end-to-end load", fmt.Sprintf("%.0f MiB", mib), "≤ 150 MiB", mib <= 150)
		fmt.Fprintf(w, "    %s\n", rep.rssParts)
		fmt.Fprintf(w, "    once started, before any load: peak %.0f MiB, anonymous resident %.0f MiB\n", float64(e.startHWM)/1024, float64(e.startAnon)/1024)
		if rep.heap != "" {
			fmt.Fprintln(w, "    --- Go heap in use right after the end-to-end rounds")
			fmt.Fprint(w, indent(rep.heap, "    "))
		}
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "    at the end of the run %.0f MiB (end-to-end phase not run)\n\n", float64(end)/1024)
}

// profile takes CPU profiles, and allocation and GC figures, of the
// gateway under the N = 10 end-to-end load and under GET
// /v1/extractions/{id}, outside the measured rounds.
func (rep *report) profile(ctx context.Context, e *env, cfg *config, tmp string) error {
	w := rep.section("6")
	dir := profileDir(cfg, tmp)
	if err := e.setItems(ctx, cfg.profileItems); err != nil {
		return err
	}
	secs := max(int(cfg.profile.Seconds()), 1)
	fmt.Fprintf(w, "6. Profile of the gateway process (CPU profile from the admin /debug/pprof, allocations as the\n")
	fmt.Fprintf(w, "   difference of two heap profiles taken after a forced GC, GC from /debug/vars), outside the measured rounds\n")
	for _, p := range []struct {
		name, title string
		t           *target
		secs        int
		flat, cum   int
	}{
		{"extract", fmt.Sprintf("POST /v1/extract/%s, N=%d", benchWorkload(cfg.profileItems).service, cfg.profileItems), e.extractTarget(cfg.profileItems), secs, 25, 45},
		{"run", "GET /v1/extractions/{id} (10 records)", e.runTarget(), min(secs, 3), 12, 30},
	} {
		if err := rep.profileOne(ctx, w, e, cfg, dir, p.name, p.title, p.t, p.secs, p.flat, p.cum); err != nil {
			return err
		}
	}
	return nil
}

func profileDir(cfg *config, tmp string) string {
	dir := cfg.profileDir
	if dir == "" {
		dir = filepath.Join(tmp, "profiles")
	}
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

func (rep *report) profileOne(ctx context.Context, w io.Writer, e *env, cfg *config, dir, name, title string, t *target, secs, flat, cum int) error {
	admin := "http://" + e.admin
	allocs0, allocs1 := filepath.Join(dir, name+"-allocs-before.pb.gz"), filepath.Join(dir, name+"-allocs-after.pb.gz")
	cpu := filepath.Join(dir, name+"-cpu.pb.gz")
	if err := download(ctx, admin+"/debug/pprof/heap?gc=1", allocs0); err != nil {
		return err
	}
	ms0, err := memstats(ctx, admin)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var perr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		perr = download(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", admin, secs), cpu)
	}()
	logf("profile: %d s CPU profile of the gateway under %s", secs, title)
	r := e.measure(ctx, t, cfg.conc, time.Duration(secs)*time.Second+500*time.Millisecond, cfg.max)
	wg.Wait()
	if perr != nil {
		return perr
	}
	ms1, err := memstats(ctx, admin)
	if err != nil {
		return err
	}
	if err := download(ctx, admin+"/debug/pprof/heap?gc=1", allocs1); err != nil {
		return err
	}
	n := float64(r.ok)
	fmt.Fprintf(w, "  %s: %d s, %d requests, %.0f req/s while profiled\n", title, secs, r.ok, r.rps())
	if n > 0 {
		fmt.Fprintf(w, "    per request: %.0f µs gateway CPU, %.0f KiB allocated, %.0f allocations; GC cycles %d (%.1f per 1000 requests), GC pauses %.2f ms in all\n",
			float64(r.cpu["gateway"].Microseconds())/n, float64(ms1.TotalAlloc-ms0.TotalAlloc)/1024/n, float64(ms1.Mallocs-ms0.Mallocs)/n,
			ms1.NumGC-ms0.NumGC, float64(ms1.NumGC-ms0.NumGC)*1000/n, float64(ms1.PauseTotalNs-ms0.PauseTotalNs)/1e6)
	}
	if name == "extract" {
		if err := rep.blocking(ctx, w, e, cfg, dir, t); err != nil {
			return err
		}
	}
	for _, a := range []struct {
		title string
		args  []string
		lines int
	}{
		{"CPU, flat (own time)", []string{"-top", fmt.Sprintf("-nodecount=%d", flat), cpu}, flat},
		{"CPU, cumulative (callees included)", []string{"-top", "-cum", fmt.Sprintf("-nodecount=%d", cum), cpu}, cum},
		{"bytes allocated during the profiled round", []string{"-top", "-sample_index=alloc_space", "-nodecount=15", "-base", allocs0, allocs1}, 15},
	} {
		fmt.Fprintf(w, "    --- %s\n", a.title)
		out, err := pprofTop(ctx, a.args...)
		if err != nil {
			fmt.Fprintf(w, "    %v\n", err)
			continue
		}
		fmt.Fprint(w, indent(pprofTable(out, a.lines), "    "))
	}
	fmt.Fprintln(w)
	return nil
}

// blocking takes a one-second execution trace of the gateway under the
// target's load and prints where its goroutines wait: on system calls
// (fsync) and on synchronization (the settle queue, locks).
func (rep *report) blocking(ctx context.Context, w io.Writer, e *env, cfg *config, dir string, t *target) error {
	trace := filepath.Join(dir, "trace.out")
	var wg sync.WaitGroup
	var terr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(250 * time.Millisecond)
		terr = download(ctx, "http://"+e.admin+"/debug/pprof/trace?seconds=1", trace)
	}()
	r := e.measure(ctx, t, cfg.conc, 1500*time.Millisecond, cfg.max)
	wg.Wait()
	if terr != nil {
		return terr
	}
	fmt.Fprintf(w, "    --- where requests wait: 1 s execution trace under the same load (%.0f req/s), blocking time by kind\n", r.rps())
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(w, "    no go tool on PATH: trace not analysed")
		return nil
	}
	for _, kind := range []string{"syscall", "sync"} {
		prof := filepath.Join(dir, "block-"+kind+".pb")
		out, err := exec.CommandContext(ctx, gobin, "tool", "trace", "-pprof="+kind, trace).Output()
		if err == nil {
			err = os.WriteFile(prof, out, 0o644)
		}
		if err != nil {
			fmt.Fprintf(w, "    go tool trace -pprof=%s: %v\n", kind, err)
			continue
		}
		args, note := []string{"-top", "-cum", "-nodecount=14", prof}, "every goroutine"
		if kind == "sync" {
			// Idle connections and server loops wait too; keep the
			// extraction handler's goroutines, without Caddy's frames.
			args = []string{"-top", "-cum", "-nodecount=22", "-focus=api.\\(\\*API\\).extract",
				"-hide=caddyhttp|net/http|ratelimit|Handler..ServeHTTP|API..ServeHTTP|API..route", prof}
			note = "the extraction handler's goroutines only"
		}
		top, err := pprofTop(ctx, args...)
		if err != nil {
			fmt.Fprintf(w, "    %v\n", err)
			continue
		}
		fmt.Fprintf(w, "    [%s: %s]\n", kind, note)
		fmt.Fprint(w, indent(pprofTable(top, 22), "    "))
	}
	return nil
}

// pprofTop runs go tool pprof with args and returns its output.
func pprofTop(ctx context.Context, args ...string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go tool on PATH: profile not analysed")
	}
	out, err := exec.CommandContext(ctx, gobin, append([]string{"tool", "pprof"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %v\n%s", err, out)
	}
	return string(out), nil
}

// heapSnapshot keeps the top of the gateway's in-use heap, to explain its
// resident set.
func (rep *report) heapSnapshot(ctx context.Context, e *env, cfg *config) {
	path := filepath.Join(profileDir(cfg, e.dir), "heap.pb.gz")
	if err := download(ctx, "http://"+e.admin+"/debug/pprof/heap", path); err != nil {
		rep.heap = err.Error()
		return
	}
	out, err := pprofTop(ctx, "-top", "-sample_index=inuse_space", "-nodecount=12", path)
	if err != nil {
		rep.heap = err.Error()
		return
	}
	rep.heap = pprofTable(out, 12)
}

// pprofTable keeps the summary lines and the first n rows of a -top report.
func pprofTable(out string, n int) string {
	var keep []string
	rows := -1
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") ||
			strings.HasPrefix(l, "Time:") || strings.HasPrefix(l, "Main binary"):
			continue
		case strings.Contains(l, "flat%") && strings.Contains(l, "cum%"):
			rows = 0
		case rows >= 0:
			rows++
			if rows > n || strings.TrimSpace(l) == "" {
				continue
			}
		case strings.TrimSpace(l) == "":
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n") + "\n"
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// download saves a URL's body to a file.
func download(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.ReadFrom(resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// memStats is the part of runtime.MemStats the profile reports.
type memStats struct {
	TotalAlloc, Mallocs, PauseTotalNs uint64
	Sys, HeapInuse, HeapIdle          uint64
	StackInuse                        uint64
	HeapReleased                      uint64
	NumGC                             uint32
}

// memstats reads the gateway's runtime.MemStats from the admin /debug/vars.
func memstats(ctx context.Context, admin string) (memStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/debug/vars", nil)
	if err != nil {
		return memStats{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return memStats{}, err
	}
	defer resp.Body.Close()
	var v struct {
		Memstats memStats `json:"memstats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return memStats{}, fmt.Errorf("decoding /debug/vars: %v", err)
	}
	return v.Memstats, nil
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// reservation prints the reservation step's CPU per call against the
// end-to-end CPU per call of a gateway on the same store in the same run
// (target ≤ 10 %): badger's against section 1 (the gateway process),
// PostgreSQL's against section 1p (the gateway process and the backends
// serving it). The served path is the figure held to the target; the
// failed path is printed under it.
func (rep *report) reservation() {
	if len(rep.reserve) == 0 {
		return
	}
	w := rep.section("2")
	fmt.Fprintln(w, "2. Reservation step, in process (16 callers on the hot account and its key, as the settle phase): CPU per call of this")
	fmt.Fprintln(w, "   process and of PostgreSQL's backends, as a share of the end-to-end CPU per call of a gateway on the same store in this")
	fmt.Fprintln(w, "   run (badger: the gateway process, section 1; PostgreSQL: the gateway process + its backends, section 1p)   target ≤ 10 %")
	fmt.Fprintf(w, "   served: what a served call pays, Store.Reserve of a one-record hold alone in the measured windows (%d holds per caller\n", reservePerWindow)
	fmt.Fprintln(w, "     per window, released outside them); the settle then captures the hold in its own transaction, a statement it runs")
	fmt.Fprintln(w, "     with or without a hold: not counted here")
	fmt.Fprintln(w, "   failed: what a failed call pays, Reserve + Release of the live hold (a second commit)")
	for _, f := range rep.reserve {
		srv := ""
		if f.serverOK {
			srv = fmt.Sprintf(" + PostgreSQL backends %.0f µs", f.serverUS)
		}
		fmt.Fprintf(w, "    %-9s %-6s %6d calls: %5.1f µs user + %5.1f µs system%s = %.1f µs per call\n",
			f.store, f.path, f.calls, f.userUS, f.sysUS, srv, f.cpuUS())
		served := f.path == reservePathServed
		share := func(what string, e2e float64) float64 {
			sh := 100 * f.cpuUS() / e2e
			fmt.Fprintf(w, "              share of %s (%4.0f µs): %5.1f %%   target ≤ 10 %%  %s\n", what, e2e, sh, mark(sh <= 10))
			return sh
		}
		summaryRow := func(sh float64) {
			if served {
				rep.check(fmt.Sprintf("reservation step %s, share of e2e CPU at N=1", f.store), fmt.Sprintf("%.1f %%", sh), "≤ 10 %", sh <= 10)
			} else {
				rep.info(fmt.Sprintf("reservation step %s, failed call, share at N=1", f.store), fmt.Sprintf("%.1f %%", sh), "Reserve + Release, printed beside it")
			}
		}
		if f.store == "postgres" {
			if p := rep.pgE2E; p != nil && p.cpuUS() > 0 {
				summaryRow(share("the PostgreSQL-backed gateway's e2e CPU per call at N=1, gateway + backends", p.cpuUS()))
			} else {
				fmt.Fprintln(w, "              (PostgreSQL-backed end-to-end phase not run: no share printed; the badger-backed call, without")
				fmt.Fprintln(w, "              any database CPU, is not its denominator)")
			}
			continue
		}
		for _, n := range []int{1, 10} {
			if e2e, ok := rep.e2eCPU[n]; ok && e2e > 0 {
				sh := share(fmt.Sprintf("the gateway's e2e CPU per call at N=%-2d", n), e2e)
				if n == 1 {
					// N = 1: the smallest call, where the fixed cost weighs most.
					summaryRow(sh)
				}
			}
		}
		if len(rep.e2eCPU) == 0 {
			fmt.Fprintln(w, "              (end-to-end phase not run: no share printed)")
		}
	}
	fmt.Fprintln(w)
}

// summary prints every figure against its target.
func (rep *report) summary() {
	rep.reservation()
	w := rep.section("9")
	if len(rep.targets) == 0 {
		return
	}
	fmt.Fprintf(w, "Targets (medians of this run; the caveat above applies; load average at the end: %s)\n", loadavg())
	width := 0
	for _, t := range rep.targets {
		width = max(width, len([]rune(t.what)))
	}
	for _, t := range rep.targets {
		if t.info {
			fmt.Fprintf(w, "    %-*s  %10s   %s\n", width, t.what, t.figure, t.target)
			continue
		}
		fmt.Fprintf(w, "    %-*s  %10s   target %-10s %s\n", width, t.what, t.figure, t.target, mark(t.ok))
	}
	total := time.Since(started)
	core := rep.coreTime
	if core == 0 {
		core = total
	}
	fmt.Fprintf(w, "Total time of the benchmark program: %s (the build before it not counted); the core phases (provision … profile): %s   target ≤ 6 min  %s\n",
		total.Round(time.Second), core.Round(time.Second), mark(core <= 6*time.Minute))
	fmt.Fprintf(w, "    the load phases (signin, inflight, longjob, webhooks, async: issues 24, 26, 27) take the rest, bounded by -timeout\n")
}
