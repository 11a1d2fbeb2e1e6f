package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The long-job phase (section 8) holds calls on upstream jobs that take
// their time: each call of the gateway starts an actor run that takes
// -longjob-seconds of upstream time (scaled by -longjob-scale in the
// simulator), waits for it with waitForFinish polls and reads its dataset;
// the reference is Caddy's reverse_proxy holding the same number of
// requests on the actor's synchronous endpoint, which answers when the same
// job ends. Peak RSS of the two, and the gateway's CPU per job-minute: what
// waiting on (and polling) a minute of upstream work costs.

// longJobActor is the actor of the bench workload's source_a offer
// (pro_net/profile.info, source_a/actor_1).
const longJobActor = "dev_fusion~linkedin-profile-scraper"

// longJob runs the phase: the gateway, then reverse_proxy, each in a fresh
// Caddy process and a fresh simulator.
func (rep *report) longJob(ctx context.Context, tmp string, cfg *config) error {
	w := rep.section("10")
	n := cfg.longJobCalls
	soft, hard, note := raiseFileLimit(uint64(2*n + 4096))
	proto := inflightProto(cfg.inflightProto, n, soft)
	job := time.Duration(cfg.longJobSeconds * float64(time.Second))
	real := time.Duration(float64(job) * cfg.longJobScale)
	var rs [2]inflightResult
	for i, gateway := range []bool{true, false} {
		r, err := longJobRun(ctx, tmp, cfg, n, gateway, proto, real)
		if err != nil {
			return err
		}
		logf("long jobs %d %s: %d ok, %d failed%s, peak %d MiB (idle %d), CPU %.1f s; VmRSS every 0.5 s (MiB): %s",
			n, r.target, r.ok, r.failed, errNote(r), r.peakKiB/1024, r.idleKiB/1024, r.procCPU.Seconds(), r.rssTrace(5))
		rs[i] = r
	}
	g, p := rs[0], rs[1]
	fmt.Fprintf(w, "8. Long upstream jobs: %d calls, each on an actor run of %.0f s of upstream time (simulator -time-scale %g: %.1f s),\n",
		n, job.Seconds(), cfg.longJobScale, real.Seconds())
	fmt.Fprintf(w, "   started evenly over %s; the gateway starts the run, polls it (waitForFinish) and reads its dataset; the reference\n", cfg.inflightRamp)
	fmt.Fprintln(w, "   is reverse_proxy holding the same requests on the actor's sync endpoint, answered when the same job ends;")
	fmt.Fprintf(w, "   each in a fresh Caddy process and simulator; callers over %s; file limit soft %d, hard %d %s\n", proto, soft, hard, note)
	fmt.Fprintf(w, "    %-14s %8s %8s %8s %7s %9s %9s %9s %10s\n", "target", "idle MiB", "peak MiB", "KiB/call", "errors", "added p50", "added p99", "in flight", "CPU s")
	for _, r := range rs {
		fmt.Fprintf(w, "    %-14s %8.0f %8.0f %8.1f %7d %7.0fms %7.0fms %9d %10.2f%s\n",
			r.target, float64(r.idleKiB)/1024, float64(r.peakKiB)/1024, r.perCallKiB(), r.failed,
			ms(percentile(r.added, 0.5)), ms(percentile(r.added, 0.99)), r.maxInFlight, r.procCPU.Seconds(), errNote(r))
	}
	ratio := float64(g.peakKiB) / float64(p.peakKiB)
	jobMinutes := float64(g.ok) * job.Minutes()
	perJobMin := 0.0
	if jobMinutes > 0 {
		perJobMin = float64(g.procCPU.Microseconds()) / 1000 / jobMinutes
	}
	refPerJobMin := 0.0
	if p.ok > 0 {
		refPerJobMin = float64(p.procCPU.Microseconds()) / 1000 / (float64(p.ok) * job.Minutes())
	}
	fmt.Fprintf(w, "    gateway/reverse_proxy peak RSS %.2f ×  target ≤ 1.1 ×  %s;  errors %d / %d\n", ratio, mark(ratio <= 1.1), g.failed, p.failed)
	fmt.Fprintf(w, "    CPU per job-minute: gateway %.2f ms (start, polls, dataset read, normalize, settle), reverse_proxy %.2f ms\n", perJobMin, refPerJobMin)
	fmt.Fprintln(w, "    (a job-minute is one minute of upstream time one call waited on; the scaled simulator answers each")
	fmt.Fprintln(w, "    waitForFinish poll when the job ends or after its scaled 60 s, as the real API does unscaled)")
	fmt.Fprintln(w)
	rep.check(fmt.Sprintf("long jobs %d: gateway/reverse_proxy peak RSS", n), fmt.Sprintf("%.2f ×", ratio), "≤ 1.1 ×", ratio <= 1.1)
	rep.check(fmt.Sprintf("long jobs %d: gateway errors", n), strconv.Itoa(g.failed), "= 0", g.failed == 0)
	rep.info("long jobs: gateway CPU per job-minute", fmt.Sprintf("%.2f ms", perJobMin), "no target")
	return nil
}

// longJobRun starts a time-scaled simulator and a Caddy process, makes one
// warm call of the target, then holds n calls on jobs of real length job.
func longJobRun(ctx context.Context, tmp string, cfg *config, n int, gateway bool, proto string, job time.Duration) (inflightResult, error) {
	res := inflightResult{calls: n, target: "reverse_proxy", proto: proto}
	if gateway {
		res.target = "gateway"
	}
	e, err := freshEnv(ctx, tmp, cfg, fmt.Sprintf("longjob-%d-%s-", n, res.target), proto, true,
		"-time-scale", strconv.FormatFloat(cfg.longJobScale, 'g', -1, 64))
	if err != nil {
		return res, err
	}
	defer e.close()
	t := &target{name: "reverse_proxy", method: http.MethodPost, header: jsonHeader(),
		url:  e.refURL + "/v2/acts/" + longJobActor + "/run-sync-get-dataset-items?timeout=300&maxItems=1",
		body: []byte(`{"profileUrls":["` + benchInput + `"]}`)}
	if gateway {
		if err := e.createAccount(ctx); err != nil {
			return res, err
		}
		h := jsonHeader()
		h.Set("Authorization", "Bearer "+e.key)
		t = &target{name: "gateway", method: http.MethodPost, url: e.gwURL + "/v1/extract/pro_net/profile.info", header: h,
			body: []byte(`{"url":"` + benchInput + `","provider":"source_a/actor_1"}`)}
	}
	if st, body, err := t.fetch(ctx, e.client); err != nil || st != http.StatusOK && st != http.StatusCreated {
		return res, fmt.Errorf("long-job warm call of %s: %d %v: %s", res.target, st, err, clip(body))
	}
	fault, _ := json.Marshal(map[string]any{"target": longJobActor, "duration_s": cfg.longJobSeconds})
	if st, body, err := e.post(ctx, e.simA+"/_sim/faults", fault); err != nil || st >= 300 {
		return res, fmt.Errorf("setting the job duration: %d %v %s", st, err, clip(body))
	}
	pid := e.gw.cmd.Process.Pid
	res.idleKiB = memKiB(pid, "VmRSS")
	res.hwmReset = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	cpu0 := cpuTime(pid)
	stopSampling := sampleFDs(pid, 0, &res) // port 0: no listener sampled
	// The runtime's view once every call has started and none has been
	// answered: where a held call's memory is (heap or stacks).
	held := time.AfterFunc(cfg.inflightRamp+(job-cfg.inflightRamp)/2, func() {
		if cfg.profileDir != "" {
			base := filepath.Join(profileDir(cfg, tmp), fmt.Sprintf("longjob-%d-%s", n, res.target))
			if err := download(ctx, "http://"+e.admin+"/debug/pprof/heap?gc=1", base+"-heap.pb.gz"); err != nil {
				logf("long-job heap profile: %v", err)
			}
			if err := download(ctx, "http://"+e.admin+"/debug/pprof/goroutine?debug=1", base+"-goroutines.txt"); err != nil {
				logf("long-job goroutine profile: %v", err)
			}
		}
		if ms, err := memstats(ctx, "http://"+e.admin); err == nil {
			logf("long jobs %d %s held: heap in use %.1f MiB, stacks %.1f MiB (%.1f KiB per call), runtime total %.1f MiB, VmRSS %.1f MiB",
				n, res.target, float64(ms.HeapInuse)/(1<<20), float64(ms.StackInuse)/(1<<20), float64(ms.StackInuse)/1024/float64(n),
				float64(ms.Sys)/(1<<20), float64(memKiB(pid, "VmRSS"))/1024)
		}
	})
	holdCalls(ctx, t, n, cfg.inflightRamp, job, proto, &res)
	held.Stop()
	stopSampling()
	res.procCPU = cpuTime(pid) - cpu0
	res.peakKiB = memKiB(pid, "VmHWM")
	if e.gw.exited() {
		return res, fmt.Errorf("%s exited during the long-job level %d:\n%s", e.gw.name, n, e.gw.tail(20))
	}
	return res, ctx.Err()
}
