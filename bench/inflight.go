package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// The in-flight phase holds many calls at once on a slow upstream: the
// simulator answers after -inflight-latency, and the load generator starts
// each level's calls over -inflight-ramp, one connection per call, so that
// for a moment every call of the level is in flight. Each (level, target)
// runs in a fresh Caddy process (the bench Caddyfile, both sites loaded)
// and a fresh simulator, so each peak RSS is that run's own. A data
// gateway's calls wait seconds to minutes on upstream scrapes: this is the
// load shape its users meet.

// inflightResult is one run: one target at one level.
type inflightResult struct {
	calls      int
	target     string
	idleKiB    int64 // VmRSS after one warm call, before the level
	peakKiB    int64 // VmHWM after the level
	hwmReset   bool  // VmHWM was reset after the warm call (else it includes start-up)
	ok, failed int
	firstErr   string
	// errKinds counts the failed calls by error text (addresses left
	// out), h2Events the HTTP/2 client's own error events
	// (http2.Transport.CountError: GOAWAYs with an error code, frames it
	// could not read, connections it closed): what tells a reset
	// connection's cause (issue 38's 50 resets, not reproduced since).
	errKinds    map[string]int
	h2Events    map[string]int
	added       []time.Duration // latency over the upstream's, successful calls, sorted
	maxInFlight int64
	wall        time.Duration
	procCPU     time.Duration // CPU of the Caddy process during the level
	fdsPeak     int           // open descriptors of the Caddy process, highest sampled
	proto       string        // the callers' protocol to Caddy: h1 or h2c
	conns       int64         // connections the load generator opened to Caddy
	rssKiB      []int64       // VmRSS of the Caddy process every 100 ms over the level
	// The kernel's view (netstat.go): its TCP counters over the level
	// (listen overflows and drops, resets sent), and the longest accept
	// queue of Caddy's listener sampled, against the queue's bound.
	tcpDelta   string
	acceptPeak int
	acceptSeen bool
}

// rssTrace is the level's VmRSS samples, one every step (a multiple of
// 100 ms), in MiB: where in the level the peak is (the calls held, or
// their answers).
func (r inflightResult) rssTrace(step int) string {
	var b strings.Builder
	for i := 0; i < len(r.rssKiB); i += step {
		fmt.Fprintf(&b, " %d", r.rssKiB[i]/1024)
	}
	return strings.TrimSpace(b.String())
}

// perCallKiB is the memory per in-flight call: (peak − idle) / calls.
func (r inflightResult) perCallKiB() float64 {
	return float64(r.peakKiB-r.idleKiB) / float64(r.calls)
}

// inflight runs every level against the gateway and reverse_proxy.
func (rep *report) inflight(ctx context.Context, tmp string, cfg *config) error {
	w := rep.section("7")
	top := 0
	for _, n := range cfg.inflightLevels {
		top = max(top, n)
	}
	// The Caddy process holds two descriptors per call (the caller's and
	// the upstream's), the load generator and the simulator one each.
	soft, hard, note := raiseFileLimit(uint64(2*top + 4096))
	logf("in-flight: file limit soft %d, hard %d %s", soft, hard, note)

	var results []inflightResult
	protos := map[int]string{}
	for _, n := range cfg.inflightLevels {
		protos[n] = inflightProto(cfg.inflightProto, n, soft)
		for _, gateway := range []bool{true, false} {
			r, err := inflightRun(ctx, tmp, cfg, n, gateway, protos[n])
			if err != nil {
				return err
			}
			logf("in-flight %d %s: %d ok, %d failed, peak %d MiB (idle %d), p99 added %.0f ms",
				n, r.target, r.ok, r.failed, r.peakKiB/1024, r.idleKiB/1024, ms(percentile(r.added, 0.99)))
			results = append(results, r)
		}
	}

	fmt.Fprintf(w, "7. In flight: calls held by a slow upstream (simulator latency %s, N=%d records),\n",
		cfg.inflightLatency, cfg.inflightItems)
	fmt.Fprintf(w, "   started evenly over %s; each level and target in a fresh Caddy process (the bench Caddyfile) and a fresh simulator\n", cfg.inflightRamp)
	fmt.Fprintf(w, "   file limit (RLIMIT_NOFILE, raised by the bench, inherited by Caddy and the simulator): soft %d, hard %d\n", soft, hard)
	if note != "" {
		fmt.Fprintf(w, "   WARNING: %s; the Caddy process needs about 2 descriptors per call\n", note)
	}
	fmt.Fprintf(w, "   callers' protocol (-inflight-proto %s): h1 = one connection per call (2 descriptors per call in Caddy);\n", cfg.inflightProto)
	fmt.Fprintln(w, "   h2c = HTTP/2 cleartext, Caddy's `protocols h1 h2c`, up to 250 calls per connection (Caddy 2.11's HTTP/2 default,")
	fmt.Fprintln(w, "   no Caddyfile option raises it; the client opens more connections), for both targets alike; Caddy's upstream leg stays")
	fmt.Fprintln(w, "   HTTP/1.1, one connection per call")
	for _, n := range cfg.inflightLevels {
		if protos[n] == "h2c" && cfg.inflightProto == "auto" {
			fmt.Fprintf(w, "   %d calls: callers over h2c: file limit %d < needed %d (2 per call + %d)\n", n, soft, fdsNeeded(n), fdsSpare)
		}
	}
	fmt.Fprintf(w, "    %6s %-14s %5s %8s %8s %8s %7s %9s %9s %9s %7s %6s %8s %6s\n",
		"calls", "target", "proto", "idle MiB", "peak MiB", "KiB/call", "errors", "added p50", "added p99", "in flight", "fds", "conns", "CPU ms/c", "wall s")
	for i := 0; i+1 < len(results); i += 2 {
		g, p := results[i], results[i+1]
		for _, r := range []inflightResult{g, p} {
			hw := ""
			if !r.hwmReset {
				hw = "  (VmHWM not reset: includes start-up)"
			}
			if r.maxInFlight < int64(r.calls) {
				hw += "  (not all in flight at once: the first answers came before the last call started)"
			}
			cpu := 0.0
			if r.ok+r.failed > 0 {
				cpu = float64(r.procCPU.Microseconds()) / 1000 / float64(r.ok+r.failed)
			}
			fmt.Fprintf(w, "    %6d %-14s %5s %8.0f %8.0f %8.1f %7d %7.0fms %7.0fms %9d %7d %6d %8.2f %6.1f%s%s\n",
				r.calls, r.target, r.proto, float64(r.idleKiB)/1024, float64(r.peakKiB)/1024, r.perCallKiB(), r.failed,
				ms(percentile(r.added, 0.5)), ms(percentile(r.added, 0.99)), r.maxInFlight, r.fdsPeak, r.conns, cpu, r.wall.Seconds(), hw, errNote(r))
			fmt.Fprintf(w, "           kernel over the level: %s; %s\n", r.tcpDelta, acceptNote(r))
		}
		ratio := float64(g.peakKiB) / float64(p.peakKiB)
		fmt.Fprintf(w, "    %6d gateway/reverse_proxy peak RSS %.2f ×  target ≤ 1.1 ×  %s;  memory per call %.2f ×;  errors %d / %d\n",
			g.calls, ratio, mark(ratio <= 1.1), g.perCallKiB()/p.perCallKiB(), g.failed, p.failed)
		if g.calls == top {
			rep.check(fmt.Sprintf("in flight %d: gateway errors", top), strconv.Itoa(g.failed), "= 0", g.failed == 0)
			rep.check(fmt.Sprintf("in flight %d: gateway/reverse_proxy peak RSS", top), fmt.Sprintf("%.2f ×", ratio), "≤ 1.1 ×", ratio <= 1.1)
		}
	}
	fmt.Fprintln(w, "    idle: VmRSS after one warm call; peak: VmHWM after the level (reset through /proc/<pid>/clear_refs after the")
	fmt.Fprintln(w, "    warm call); KiB/call = (peak − idle) / calls; added: a call's latency minus the upstream's; in flight: most calls")
	fmt.Fprintln(w, "    open at once at the load generator; fds: most descriptors the Caddy process held (sampled); conns: connections the load")
	fmt.Fprintln(w, "    generator opened to Caddy; CPU ms/c: Caddy process CPU per call. kernel: the TCP counters of /proc/net/netstat and")
	fmt.Fprintln(w, "    /proc/net/snmp over the level (the whole network namespace: other work on the machine counts too), and the")
	fmt.Fprintln(w, "    longest accept queue of Caddy's listener sampled every 100 ms (/proc/net/tcp) against its bound")
	fmt.Fprintln(w)
	return nil
}

// acceptNote is the longest accept queue sampled, against its bound.
func acceptNote(r inflightResult) string {
	if !r.acceptSeen {
		return "accept queue not seen"
	}
	return fmt.Sprintf("accept queue at most %d (bound: net.core.somaxconn %d)", r.acceptPeak, somaxconn())
}

func errNote(r inflightResult) string {
	var b strings.Builder
	if r.failed > 0 {
		b.WriteString("  first error: " + clip([]byte(r.firstErr)))
		if len(r.errKinds) > 1 {
			b.WriteString("; by kind: " + countsText(r.errKinds))
		}
	}
	if len(r.h2Events) > 0 {
		b.WriteString("  HTTP/2 client events: " + countsText(r.h2Events))
	}
	return b.String()
}

// countsText is counts as "key n, key n" in key order.
func countsText(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// addrs matches the host:port pairs of an error text.
var addrs = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`)

// errKind is an error's text with its addresses left out, so that the
// calls failing alike count as one kind.
func errKind(err error) string {
	return clip([]byte(addrs.ReplaceAllString(err.Error(), "addr")))
}

// fdsSpare is what the Caddy process holds besides its calls' connections
// (listeners, badger's files, the admin endpoint), with a margin.
const fdsSpare = 256

// fdsNeeded is the descriptors the Caddy process needs to hold n calls
// with one caller connection each: the caller's and the upstream's.
func fdsNeeded(n int) int { return 2*n + fdsSpare }

// inflightProto decides the callers' protocol of a level: h1 unless the
// file limit cannot hold a connection per call (auto), or as asked.
func inflightProto(flag string, n int, limit uint64) string {
	if flag != "auto" {
		return flag
	}
	if limit >= uint64(fdsNeeded(n)) {
		return "h1"
	}
	return "h2c"
}

// freshEnv starts a simulator (with simArgs) and a Caddy process with the
// bench Caddyfile in a directory of its own under tmp, for one level of a
// phase that measures a process from its start; refToA points the
// reverse_proxy site at the simulator's source_a listener (both serve both
// protocols) instead of source_b's. close stops both and removes the
// directory.
func freshEnv(ctx context.Context, tmp string, cfg *config, prefix, proto string, refToA bool, simArgs ...string) (*env, error) {
	dir, err := os.MkdirTemp(tmp, prefix)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(6)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	a, b := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	e := &env{dir: dir, client: newClient(4), simA: "http://" + a, simB: "http://" + b}
	e.sim, err = startChild("upstream-sim", filepath.Join(dir, "sim.log"), nil, cfg.simBin, append([]string{"-a", a, "-b", b}, simArgs...)...)
	if err == nil {
		err = waitHTTP(ctx, e.sim, e.simA+"/_sim/health")
	}
	ref := b
	if refToA {
		ref = a
	}
	d := caddyfileData{
		Admin: ports[2], GW: ports[3], Ref: ports[4], Static: ports[5],
		Services: cfg.services, Data: filepath.Join(dir, "badger"),
		SimA: e.simA, SimB: e.simB, SimBHost: ref, Catalogue: "none", Run: "none", H2C: proto == "h2c",
	}
	e.addresses(d)
	if err == nil {
		err = e.startGateway(ctx, cfg, d, "caddy.log")
	}
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// close stops the processes of a freshEnv and removes its directory.
func (e *env) close() {
	if e.gw != nil {
		e.gw.stop()
	}
	if e.sim != nil {
		e.sim.stop()
	}
	os.RemoveAll(e.dir)
}

// inflightRun starts a simulator and a Caddy process, makes one warm call
// of the target, then holds n calls at once and measures the process.
func inflightRun(ctx context.Context, tmp string, cfg *config, n int, gateway bool, proto string) (inflightResult, error) {
	res := inflightResult{calls: n, target: "reverse_proxy", proto: proto}
	if gateway {
		res.target = "gateway"
	}
	e, err := freshEnv(ctx, tmp, cfg, fmt.Sprintf("inflight-%d-%s-", n, res.target), proto, false, "-latency", "0")
	if err != nil {
		return res, err
	}
	defer e.close()
	if err := e.setItems(ctx, cfg.inflightItems); err != nil {
		return res, err
	}
	t := e.proxyTarget(cfg.inflightItems)
	if gateway {
		if err := e.createAccount(ctx); err != nil {
			return res, err
		}
		t = e.extractTarget(cfg.inflightItems)
	}
	if st, body, err := t.fetch(ctx, e.client); err != nil || st != http.StatusOK {
		return res, fmt.Errorf("in-flight warm call of %s: %d %v: %s", res.target, st, err, clip(body))
	}
	fault, _ := json.Marshal(map[string]any{"target": benchWorkload(cfg.inflightItems).dataset, "items": cfg.inflightItems, "latency_ms": cfg.inflightLatency.Milliseconds()})
	if st, body, err := e.post(ctx, e.simA+"/_sim/faults", fault); err != nil || st >= 300 {
		return res, fmt.Errorf("setting the simulator's latency: %d %v %s", st, err, clip(body))
	}
	pid := e.gw.cmd.Process.Pid
	res.idleKiB = memKiB(pid, "VmRSS")
	// "5" resets the peak resident set to the current one (proc(5)).
	res.hwmReset = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	cpu0 := cpuTime(pid)

	tcp0 := readTCPCounters()
	stopSampling := sampleFDs(pid, urlPort(t.url), &res)
	var heap sync.WaitGroup
	if cfg.profileDir != "" {
		// With -profile-dir: the goroutines and the in-use heap once every
		// call has started and none has been answered.
		heap.Add(1)
		go func() {
			defer heap.Done()
			time.Sleep(cfg.inflightRamp + (cfg.inflightLatency-cfg.inflightRamp)/2)
			base := filepath.Join(profileDir(cfg, tmp), fmt.Sprintf("inflight-%d-%s", n, res.target))
			// heap?gc=1: a heap profile is as of the last GC, which may
			// predate every call of the level.
			for _, p := range []string{"heap", "goroutine"} {
				q := map[string]string{"heap": "?gc=1"}[p]
				if err := download(ctx, "http://"+e.admin+"/debug/pprof/"+p+q, base+"-"+p+".pb.gz"); err != nil {
					logf("in-flight %s profile: %v", p, err)
				}
			}
			// The runtime's own view (stacks are in no profile).
			if ms, err := memstats(ctx, "http://"+e.admin); err == nil {
				logf("in-flight %d %s held: heap in use %.1f MiB, stacks %.1f MiB, runtime total %.1f MiB, VmRSS %.1f MiB",
					n, res.target, float64(ms.HeapInuse)/(1<<20), float64(ms.StackInuse)/(1<<20), float64(ms.Sys)/(1<<20),
					float64(memKiB(pid, "VmRSS"))/1024)
			}
		}()
	}
	holdCalls(ctx, t, n, cfg.inflightRamp, cfg.inflightLatency, proto, &res)
	heap.Wait()
	stopSampling()
	res.tcpDelta = tcpCountersDelta(tcp0, readTCPCounters())
	res.procCPU = cpuTime(pid) - cpu0
	res.peakKiB = memKiB(pid, "VmHWM")
	if e.gw.exited() {
		return res, fmt.Errorf("%s exited during the in-flight level %d:\n%s", e.gw.name, n, e.gw.tail(20))
	}
	return res, ctx.Err()
}

// holdCalls starts n calls of t evenly over ramp and waits for all of
// them, at most ramp + latency + 60 s: over h1 each on its own connection,
// over h2c as streams of a few HTTP/2 cleartext connections.
func holdCalls(ctx context.Context, t *target, n int, ramp, latency time.Duration, proto string, res *inflightResult) {
	var conns atomic.Int64
	var mu sync.Mutex // guards res and over while the calls and the transport report
	over := false     // every call returned: the transport's events are its own closing
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conns.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
		DisableKeepAlives:  true, // one connection per call, closed after it
		DisableCompression: true,
	}
	var rt http.RoundTripper = tr
	if proto == "h2c" {
		// HTTP/2 with prior knowledge over plain TCP. x/net's transport
		// dials one connection at a time per address and opens another
		// only when the ones it has carry as many streams as the server
		// allows; net/http's own h2c (Protocols) dialed for every request
		// that found no room during the ramp: 15 598 connections for
		// 10 000 calls, and resets once Caddy's accept queue overflowed.
		rt = &http2.Transport{
			CountError: func(event string) {
				mu.Lock()
				defer mu.Unlock()
				if over {
					return
				}
				if res.h2Events == nil {
					res.h2Events = map[string]int{}
				}
				res.h2Events[event]++
			},
			AllowHTTP: true,
			DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
				conns.Add(1)
				return dialer.DialContext(ctx, network, addr)
			},
			DisableCompression: true,
		}
	}
	defer func() { res.conns = conns.Load() }()
	defer tr.CloseIdleConnections()
	if h2, ok := rt.(*http2.Transport); ok {
		defer h2.CloseIdleConnections()
	}
	c := &http.Client{Transport: rt}
	ctx, cancel := context.WithTimeout(ctx, ramp+latency+60*time.Second)
	defer cancel()
	var (
		wg       sync.WaitGroup
		inFlight atomic.Int64
		peak     atomic.Int64
	)
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(ramp * time.Duration(i) / time.Duration(n))); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			mu.Lock()
			res.failed += n - i
			if res.firstErr == "" {
				res.firstErr = "not started: " + ctx.Err().Error()
			}
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			now := inFlight.Add(1)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			t0 := time.Now()
			status, _, err := t.do(ctx, c)
			d := time.Since(t0)
			inFlight.Add(-1)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				res.failed++
				if res.firstErr == "" {
					res.firstErr = err.Error()
				}
				if res.errKinds == nil {
					res.errKinds = map[string]int{}
				}
				res.errKinds[errKind(err)]++
			case status/100 != 2: // 201: an actor's sync answer
				res.failed++
				if res.firstErr == "" {
					res.firstErr = fmt.Sprintf("HTTP %d", status)
				}
			default:
				res.ok++
				res.added = append(res.added, d-latency)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	over = true
	mu.Unlock()
	res.wall = time.Since(start)
	res.maxInFlight = peak.Load()
	sort.Slice(res.added, func(i, j int) bool { return res.added[i] < res.added[j] })
}

// sampleFDs records, every 100 ms until stopped, the most descriptors the
// Caddy process held, its VmRSS, and the longest accept queue of its
// listener on port.
func sampleFDs(pid, port int, res *inflightResult) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := countFDs(pid); n > res.fdsPeak {
				res.fdsPeak = n
			}
			res.rssKiB = append(res.rssKiB, memKiB(pid, "VmRSS"))
			if q, ok := listenQueue(port); ok {
				res.acceptPeak, res.acceptSeen = max(res.acceptPeak, q), true
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// countFDs is the number of open descriptors of a process (0 when /proc
// cannot tell).
func countFDs(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	return len(names)
}

// parseLevels reads a comma-separated list of positive call counts.
func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-inflight: %q is not a positive call count", f)
		}
		out = append(out, n)
	}
	return out, nil
}
