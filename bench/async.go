package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The async phase holds many asynchronous runs (Prefer: respond-async) in
// flight on one node: the simulator answers each upstream call only after
// a long latency, so every run submitted stays running. It measures what
// holding them costs (peak RSS, the worker's CPU while idle: lease
// renewals), what following one costs (CPU per GET /v1/extractions/{id}
// poll), and how long a node killed with SIGKILL takes, once restarted,
// to resume them all (the time from its start to its last "resumed async
// runs" log line).

var (
	asyncRunsFlag  = flag.Int("async-runs", 10000, "async phase: runs held in flight on one node")
	asyncPollsFlag = flag.Int("async-polls", 5000, "async phase: GET /v1/extractions/{id} polls measured")
)

// asyncRuns is the async phase.
func (rep *report) asyncRuns(ctx context.Context, tmp string, cfg *config) error {
	n, polls := *asyncRunsFlag, *asyncPollsFlag
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
		AppExtra: fmt.Sprintf("attempt_timeout 30m\n\t\tsoft_timeout 30m\n\t\tasync_workers %d\n\t\tasync_max_per_account %d", n, n),
	}
	e.addresses(d)
	sim, err := startChild("upstream-sim", filepath.Join(dir, "sim.log"), nil, cfg.simBin, "-a", a, "-b", b, "-latency", "0")
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
	defer func() { e.gw.stop() }()
	if err := e.createAccount(ctx); err != nil {
		return err
	}
	fault, _ := json.Marshal(map[string]any{"target": benchWorkload(1).dataset, "latency_ms": (20 * time.Minute).Milliseconds()})
	if st, body, err := e.post(ctx, e.simA+"/_sim/faults", fault); err != nil || st >= 300 {
		return fmt.Errorf("setting the simulator's latency: %d %v %s", st, err, clip(body))
	}
	pid := e.gw.cmd.Process.Pid
	idle := memKiB(pid, "VmRSS")
	reset := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	cpu0 := cpuTime(pid)

	// Submit n runs, 32 at a time.
	t := e.extractTarget(1)
	t.header.Set("Prefer", "respond-async")
	ids := make([]string, n)
	var failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
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
	submit := time.Since(start)
	submitCPU := cpuTime(pid) - cpu0
	logf("async: %d runs submitted in %s (%d failed)", n, submit.Round(time.Millisecond), failed.Load())
	// Every run has started its upstream call once the worker logged no
	// new attempt for a while; a fixed pause keeps the phase bounded.
	time.Sleep(3 * time.Second)
	peak := memKiB(pid, "VmHWM")

	// The worker's own cost while the runs wait: lease renewals.
	c1 := cpuTime(pid)
	time.Sleep(10 * time.Second)
	idleCPU := cpuTime(pid) - c1

	// Follow: polls of runs in flight, 16 at a time.
	h := http.Header{"Authorization": {"Bearer " + e.key}}
	c2 := cpuTime(pid)
	var pollFailed atomic.Int64
	next.Store(0)
	pstart := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
	wg.Wait()
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

	fmt.Fprintf(w, "A. Async runs in flight on one node (badger): %d runs submitted with Prefer: respond-async, each held running\n", n)
	fmt.Fprintln(w, "   by a simulator that answers its upstream call after 20 min (async_workers = runs, so every run runs at once)")
	if note != "" {
		fmt.Fprintf(w, "   WARNING: %s (file limit %d; the node holds an upstream connection per run)\n", note, soft)
	}
	hw := ""
	if !reset {
		hw = " (VmHWM not reset: includes start-up)"
	}
	fmt.Fprintf(w, "    submit: %d × 202 in %.1f s (%.0f /s), %d failed%s; gateway CPU %.2f ms per submit\n",
		n-int(failed.Load()), submit.Seconds(), float64(n)/submit.Seconds(), failed.Load(), errText(failed.Load(), &firstErr),
		ms(submitCPU)/float64(n))
	fmt.Fprintf(w, "    memory: idle %.0f MiB, peak %.0f MiB with %d runs in flight%s; %.1f KiB per run\n",
		float64(idle)/1024, float64(peak)/1024, n, hw, float64(peak-idle)/float64(n))
	fmt.Fprintf(w, "    holding: gateway CPU %.1f ms/s over 10 s with no request (lease renewals of %d runs every lease/3)\n",
		ms(idleCPU)/10, n)
	fmt.Fprintf(w, "    follow: %d polls of GET /v1/extractions/{id} (running) in %.1f s, %d failed; gateway CPU %.3f ms per poll (background included)\n",
		polls, pollWall.Seconds(), pollFailed.Load(), ms(pollCPU)/float64(polls))
	fmt.Fprintf(w, "    restart: SIGKILL, then a new process on the same directory resumed %d runs %.2f s after its start\n",
		resumed, toResumed.Seconds())
	fmt.Fprintln(w, "    (the machine's 2 cores are shared with the simulator, the load generator and other sessions)")
	fmt.Fprintln(w)
	rep.info(fmt.Sprintf("async: peak RSS with %d runs in flight", n), fmt.Sprintf("%.0f MiB", float64(peak)/1024), "no target")
	rep.info("async: CPU per poll", fmt.Sprintf("%.3f ms", ms(pollCPU)/float64(polls)), "no target")
	rep.info(fmt.Sprintf("async: restart to %d runs resumed", resumed), fmt.Sprintf("%.2f s", toResumed.Seconds()), "no target")
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
