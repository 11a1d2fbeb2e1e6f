package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The async phase holds many asynchronous runs (Prefer: respond-async) in
// flight on one node: the simulator runs each upstream job for 20
// minutes, so every run submitted stays running, and each parks as soon
// as its job is started (no goroutine waits for it; docs/async.md). It
// measures, at each level of runs in flight (-async-levels, then
// -async-runs): RSS above idle per run, goroutines per run, and the CPU
// of holding them with no request (the node's heartbeat and its poller's
// status checks), in the first 10 s and in 10 s from 30 s later; then what following one costs (CPU per GET
// /v1/extractions/{id} poll), and how long a node killed with SIGKILL
// takes, once restarted, to resume them all (the time from its start to
// its last "resumed async runs" log line). -async-store postgres runs the
// node on a scratch schema of SDR_TEST_POSTGRES_URL instead of badger.

var (
	asyncRunsFlag   = flag.Int("async-runs", 100000, "async phase: runs held in flight on one node")
	asyncLevelsFlag = flag.String("async-levels", "10000", "async phase: lower levels of runs in flight measured on the way, comma-separated")
	asyncPollsFlag  = flag.Int("async-polls", 5000, "async phase: GET /v1/extractions/{id} polls measured")
	asyncStoreFlag  = flag.String("async-store", "badger", "async phase: the node's store, badger or postgres (SDR_TEST_POSTGRES_URL)")
	asyncCallbacks  = flag.Bool("async-callbacks", false, "async phase: the sources set callback_base (the gateway's own address; callback_fallback 1h), so parked runs wait for the simulator's callbacks instead of being checked")
)

// asyncActor is the simulator's actor behind forum_net/subreddit.posts'
// offer source_a/actor_6, and asyncBody a call of it.
const (
	asyncActor = "trudax~reddit-scraper-lite"
	asyncBody  = `{"url":"https://www.reddit.com/r/golang","provider":"source_a/actor_6","limit":3}`
)

// asyncLevel is what holding a level of runs costs.
type asyncLevel struct {
	runs       int
	rssKiB     int64         // VmRSS above idle
	goroutines int           // above idle
	cpu        time.Duration // the first 10 s
	cpuLater   time.Duration // 10 s from 30 s after
	parkWait   time.Duration // from the last submit to the goroutines settled
}

// goroutines reads the gateway's goroutine count from its admin pprof.
func (e *env) goroutines(ctx context.Context) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.admin+"/debug/pprof/goroutine?debug=1", nil)
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	_, total, ok := strings.Cut(strings.TrimSpace(line), "total ")
	if !ok {
		return 0, fmt.Errorf("goroutine profile starts %q", line)
	}
	return strconv.Atoi(total)
}

// settle waits until the gateway's goroutines stop falling (the runs
// submitted parked), at most two minutes, and returns the count.
func (e *env) settle(ctx context.Context) (int, time.Duration) {
	start := time.Now()
	prev, stable := -1, 0
	for time.Since(start) < 2*time.Minute && ctx.Err() == nil {
		n, err := e.goroutines(ctx)
		if err != nil {
			logf("async: reading goroutines: %v", err)
			return -1, time.Since(start)
		}
		if n >= prev-5 && prev >= 0 {
			stable++
		} else {
			stable = 0
		}
		prev = n
		if stable >= 3 {
			break
		}
		time.Sleep(time.Second)
	}
	return prev, time.Since(start)
}

// asyncRuns is the async phase.
func (rep *report) asyncRuns(ctx context.Context, tmp string, cfg *config) error {
	n, polls := *asyncRunsFlag, *asyncPollsFlag
	var levels []int
	for _, f := range strings.Split(*asyncLevelsFlag, ",") {
		if l, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && l > 0 && l < n {
			levels = append(levels, l)
		}
	}
	levels = append(levels, n)
	w := rep.section("async")
	soft, _, note := raiseFileLimit(uint64(2*n + 4096))
	dir, err := os.MkdirTemp(tmp, "async-")
	if err != nil {
		return err
	}
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	a, b := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	e := &env{dir: dir, client: newClient(32), simA: "http://" + a, simB: "http://" + b}
	d := caddyfileData{
		Admin: ports[2], GW: ports[3], Ref: ports[4], Static: ports[5],
		Services: cfg.services, Data: filepath.Join(dir, "badger"),
		SimA: e.simA, SimB: e.simB, SimBHost: b, Catalogue: "none", Run: "none",
		// The runs must outlive the measurement: no attempt deadline or
		// soft timeout ends them, and the node runs all of them at once.
		// async_max_per_account: the phase's runs are one account's.
		AppExtra: fmt.Sprintf("attempt_timeout 30m\n\t\tsoft_timeout 30m\n\t\tasync_max_per_account %d", n),
	}
	mode := "polling mode: no callbacks"
	if *asyncCallbacks {
		d.SourceExtra = fmt.Sprintf("callback_base http://127.0.0.1:%d\n\t\t\tcallback_secret bench-callback-secret-0123456789abcdef\n\t\t\tcallback_fallback 1h", d.GW)
		mode = "callback mode: callback_base set, callback_fallback 1h"
	}
	storeName := "badger"
	if *asyncStoreFlag == "postgres" {
		url := os.Getenv("SDR_TEST_POSTGRES_URL")
		if url == "" {
			return fmt.Errorf("async: -async-store postgres needs SDR_TEST_POSTGRES_URL")
		}
		db, err := newPGScratch(ctx, url, "async")
		if err != nil {
			return err
		}
		defer db.close()
		d.Postgres, storeName = db.storeURL(), "PostgreSQL"
	}
	e.addresses(d)
	// Time scaled by 100: a job of 120,000 upstream seconds lasts 20
	// minutes.
	sim, err := startChild("upstream-sim", filepath.Join(dir, "sim.log"), nil, cfg.simBin, "-a", a, "-b", b, "-latency", "0", "-time-scale", "0.01")
	if err != nil {
		return err
	}
	e.sim = sim
	defer sim.stop()
	if err := waitHTTP(ctx, sim, e.simA+"/_sim/health"); err != nil {
		return err
	}
	if err := e.startGateway(ctx, cfg, d, "caddy.log"); err != nil {
		return err
	}
	defer func() { e.gw.stop() }() // before db.close drops the schema under it
	if err := e.createAccount(ctx); err != nil {
		return err
	}
	// The workload: forum_net/subreddit.posts on its actor_run offer, a
	// service without a freshness cache (a run routed through the cache
	// does not park: docs/async.md).
	fault, _ := json.Marshal(map[string]any{"target": asyncActor, "duration_s": (20 * time.Minute).Seconds() * 100})
	if st, body, err := e.post(ctx, e.simA+"/_sim/faults", fault); err != nil || st >= 300 {
		return fmt.Errorf("setting the simulator's latency: %d %v %s", st, err, clip(body))
	}
	pid := e.gw.cmd.Process.Pid
	idle := memKiB(pid, "VmRSS")
	idleG, _ := e.goroutines(ctx)
	reset := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil

	// Submit n runs, 32 at a time.
	t := e.extractTarget(1)
	t.url, t.body = e.gwURL+"/v1/extract/forum_net/subreddit.posts", []byte(asyncBody)
	t.header.Set("Prefer", "respond-async")
	ids := make([]string, n)
	var failed atomic.Int64
	var firstErr atomic.Value
	var next atomic.Int64
	var wg sync.WaitGroup
	var submit time.Duration
	var submitCPU time.Duration
	var held []asyncLevel
	for _, level := range levels {
		start, c0 := time.Now(), cpuTime(pid)
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= level || ctx.Err() != nil {
						if i >= level {
							next.Add(-1)
						}
						return
					}
					st, body, err := t.fetch(ctx, e.client)
					var run struct{ ID, Status string }
					if err != nil || st != http.StatusAccepted || json.Unmarshal(body, &run) != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %v %s", st, err, clip(body)))
						continue
					}
					ids[i] = run.ID
				}
			}()
		}
		wg.Wait()
		next.Store(int64(level))
		submit += time.Since(start)
		submitCPU += cpuTime(pid) - c0
		logf("async: %d runs submitted (%d failed); waiting for them to park", level, failed.Load())
		g, wait := e.settle(ctx)
		// What holding them costs with no request: the heartbeat and the
		// poller's checks; the first 10 s, then 10 s after 20 more. The
		// first still pays for the submits: the Go runtime's scavenger
		// gives the memory of their burst back to the OS for a time that
		// grows with the runs submitted (up to 1 % of each core).
		c1 := cpuTime(pid)
		time.Sleep(10 * time.Second)
		l := asyncLevel{runs: level, rssKiB: memKiB(pid, "VmRSS") - idle, goroutines: g - idleG,
			cpu: (cpuTime(pid) - c1) / 10, parkWait: wait}
		time.Sleep(20 * time.Second)
		c2 := cpuTime(pid)
		time.Sleep(10 * time.Second)
		l.cpuLater = (cpuTime(pid) - c2) / 10
		held = append(held, l)
		logf("async: %d runs held: %.1f KiB/run, %d goroutines above idle, %.1f ms CPU/s (%.1f 30 s later)", level,
			float64(l.rssKiB)/float64(level), g-idleG, ms(l.cpu), ms(l.cpuLater))
	}
	peak := memKiB(pid, "VmHWM")

	// Follow: polls of runs in flight, 16 at a time.
	h := http.Header{"Authorization": {"Bearer " + e.key}}
	c2 := cpuTime(pid)
	var pollFailed atomic.Int64
	next.Store(0)
	pstart := time.Now()
	var wg2 sync.WaitGroup
	for range 16 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= polls || ctx.Err() != nil {
					return
				}
				id := ids[i%n]
				if id == "" {
					continue
				}
				pt := &target{method: http.MethodGet, url: e.gwURL + "/v1/extractions/" + id, header: h}
				st, body, err := pt.fetch(ctx, e.client)
				if err != nil || st != http.StatusOK || !bytes.Contains(body, []byte(`"status":"running"`)) {
					pollFailed.Add(1)
				}
			}
		}()
	}
	wg2.Wait()
	pollWall := time.Since(pstart)
	pollCPU := cpuTime(pid) - c2

	// Restart: SIGKILL, start again on the same directory, time to the
	// last claim of the resumed runs.
	_ = e.gw.cmd.Process.Kill()
	<-e.gw.done
	restart := time.Now()
	if err := e.startGateway(ctx, cfg, d, "caddy-restarted.log"); err != nil {
		return err
	}
	resumed, last, err := waitResumed(ctx, filepath.Join(dir, "caddy-restarted.log"), n-int(failed.Load()), 3*time.Minute)
	if err != nil {
		return fmt.Errorf("%w; the restarted gateway's log ends:\n%s", err, e.gw.tail(15))
	}
	toResumed := last.Sub(restart)

	fmt.Fprintf(w, "A. Async runs in flight on one node (%s): %d runs submitted with Prefer: respond-async, each held running\n", storeName, n)
	fmt.Fprintf(w, "   by a simulator whose upstream job lasts 20 min; each run parks once its job started (%s)\n", mode)
	if note != "" {
		fmt.Fprintf(w, "   WARNING: %s (file limit %d)\n", note, soft)
	}
	hw := ""
	if !reset {
		hw = " (VmHWM not reset: includes start-up)"
	}
	fmt.Fprintf(w, "    submit: %d × 202 in %.1f s (%.0f /s), %d failed%s; gateway CPU %.2f ms per submit\n",
		n-int(failed.Load()), submit.Seconds(), float64(n)/submit.Seconds(), failed.Load(), errText(failed.Load(), &firstErr),
		ms(submitCPU)/float64(n))
	for _, l := range held {
		fmt.Fprintf(w, "    holding %6d runs: RSS above idle %.1f KiB per run (target ≤ 10), %.3f goroutines per run (%d above idle), CPU %.1f ms/s with no request (target ≤ 20, flat), %.1f ms/s 30 s later; parked %.0f s after the last submit\n",
			l.runs, float64(l.rssKiB)/float64(l.runs), float64(l.goroutines)/float64(l.runs), l.goroutines, ms(l.cpu), ms(l.cpuLater), l.parkWait.Seconds())
	}
	fmt.Fprintf(w, "    memory: idle %.0f MiB, peak %.0f MiB%s\n", float64(idle)/1024, float64(peak)/1024, hw)
	fmt.Fprintf(w, "    follow: %d polls of GET /v1/extractions/{id} (running) in %.1f s, %d failed; gateway CPU %.3f ms per poll (background included)\n",
		polls, pollWall.Seconds(), pollFailed.Load(), ms(pollCPU)/float64(polls))
	fmt.Fprintf(w, "    restart: SIGKILL, then a new process on the same store resumed %d runs %.2f s after its start (target ≤ 10 s)\n",
		resumed, toResumed.Seconds())
	fmt.Fprintln(w, "    (the machine's 2 cores are shared with the simulator, the load generator and other sessions)")
	fmt.Fprintln(w)
	top := held[len(held)-1]
	rep.info(fmt.Sprintf("async: RSS per run held, %d runs (%s)", n, storeName), fmt.Sprintf("%.1f KiB", float64(top.rssKiB)/float64(n)), "target ≤ 10 KiB")
	rep.info(fmt.Sprintf("async: CPU holding %d runs (%s)", n, storeName), fmt.Sprintf("%.1f ms/s", ms(top.cpu)), "target ≤ 20 ms/s")
	rep.info(fmt.Sprintf("async: CPU holding %d runs 30 s later (%s)", n, storeName), fmt.Sprintf("%.1f ms/s", ms(top.cpuLater)), "target ≤ 20 ms/s")
	rep.info("async: CPU per poll", fmt.Sprintf("%.3f ms", ms(pollCPU)/float64(polls)), "no target")
	rep.info(fmt.Sprintf("async: restart to %d runs resumed", resumed), fmt.Sprintf("%.2f s", toResumed.Seconds()), "target ≤ 10 s")
	return nil
}

func errText(failed int64, first *atomic.Value) string {
	if failed == 0 {
		return ""
	}
	s, _ := first.Load().(string)
	return " (first: " + s + ")"
}

// waitResumed reads the gateway's log until its "resumed async runs"
// lines add up to want runs, and returns the count and the time of the
// last line.
func waitResumed(ctx context.Context, log string, want int, within time.Duration) (int, time.Time, error) {
	end := time.Now().Add(within)
	for {
		got, last := 0, time.Time{}
		if f, err := os.Open(log); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if !strings.Contains(sc.Text(), `"resumed async runs"`) {
					continue
				}
				var l struct {
					TS   float64 `json:"ts"`
					Runs int     `json:"runs"`
				}
				if json.Unmarshal(sc.Bytes(), &l) == nil {
					got += l.Runs
					last = time.Unix(0, int64(l.TS*1e9))
				}
			}
			f.Close()
		}
		if got >= want {
			return got, last, nil
		}
		if time.Now().After(end) || ctx.Err() != nil {
			return got, last, fmt.Errorf("async: %d of %d runs resumed after %s", got, want, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
