package api

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/cache"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/router"
	"socialrouter/cmd/upstream-sim/sim"
)

// The memory of a call held on a long upstream job (issue 26's long-job
// target, make bench section 10), measured in process: go test -run X
// -bench Held ./caddymodule/api. docs/perf-log.md (round 11) has figures.

// heldActor is the actor of pro_net/profile.info's source_a/actor_1 offer.
const heldActor = "dev_fusion~linkedin-profile-scraper"

// caddyFrames is how deep Caddy's server chain is above the API's
// ServeHTTP in the gateway binary: the frames of a held call's goroutine
// profile, sized from their prologues, from net/http's conn.serve (a
// caller over HTTP/1.1, as make bench section 7 makes 1,000 and 5,000
// calls) through caddymodule.Handler and the rate limiter: 5,424 bytes
// (the h2 server's runHandler is shallower: 4.5 KiB), rounded up.
const caddyFrames = 5504

// padFrame is padStack's frame: 120 bytes of locals, the return address,
// the frame pointer and the spill of its arguments.
const padFrame = 152

// padStack calls f about n frames of padFrame bytes deep.
//
//go:noinline
func padStack(n int, f func()) byte {
	var buf [120]byte
	if n <= 0 {
		f()
		return buf[0]
	}
	buf[n%120] = byte(n)
	return padStack(n-1, f) + buf[(n+1)%120]
}

// heldAPI is the test API routing to an in-process simulator with these
// faults, and no cap on the runs in flight.
func heldAPI(tb testing.TB, faults ...sim.Fault) *testAPI {
	a := newTestAPI(tb, 1_000_000*credits.PerCredit)
	srv := httptest.NewServer(sim.New(sim.Options{Faults: faults}))
	tb.Cleanup(srv.Close)
	a.Router = router.New(router.Config{AttemptTimeout: 2 * time.Minute, SoftTimeout: time.Minute}, a.simClients(tb, srv.URL), router.NewBreakers(), zap.NewNop())
	a.MaxConcurrentRuns = 1 << 20
	return a
}

func (a *testAPI) heldCall(ctx context.Context) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, "POST", "/v1/extract/pro_net/profile.info",
		strings.NewReader(`{"url":"https://www.linkedin.com/in/rbranson","provider":"source_a/actor_1"}`))
	r.Header.Set("Authorization", "Bearer "+a.secret)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, r)
	return rec
}

// BenchmarkHeldCallStack holds calls on actor runs that do not end, each
// under Caddy's depth of frames, and reports the stacks and heap per held
// call (the simulator's side and the transport's goroutines included:
// compare runs, not absolute figures). A handler that fits 16 KiB while
// it waits shows about 30 KiB of stacks per call, one that does not 45.
func BenchmarkHeldCallStack(b *testing.B) {
	a := heldAPI(b, sim.Fault{Target: heldActor, KeepRunning: true})
	benchHeld(b, func(ctx context.Context) { a.heldCall(ctx) })
}

// scrapeDataset is the dataset of pro_net/profile.info's cheapest offer
// (source_b/pro_net), the bench's in-flight workload (make bench section 7).
const scrapeDataset = "gd_l1viktl72bvl7bjuj0"

// BenchmarkHeldScrapeStack is BenchmarkHeldCallStack on the in-flight
// phase's call: pro_net/profile.info with no provider, through the
// freshness cache (live: no max-age), on a /scrape the simulator answers
// a minute later. It also reports margin-B: how many bytes of frames
// above Caddy's could be added before the held handler's stack doubles
// (negative: it already has, and by about how much too deep).
func BenchmarkHeldScrapeStack(b *testing.B) {
	a := heldAPI(b, sim.Fault{Target: scrapeDataset, LatencyMS: 60_000})
	a.Cache = cache.New(a.store, 0, time.Minute)
	call := func(ctx context.Context) { a.scrapeCall(ctx) }
	benchHeld(b, call)
	b.ReportMetric(float64(stackMargin(call)), "margin-B")
}

func (a *testAPI) scrapeCall(ctx context.Context) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, "POST", "/v1/extract/pro_net/profile.info",
		strings.NewReader(`{"url":"https://www.linkedin.com/in/rbranson"}`))
	r.Header.Set("Authorization", "Bearer "+a.secret)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, r)
	return rec
}

// benchHeld holds 300 calls at a time under Caddy's depth, b.N times,
// and reports the stacks and heap per held call.
func benchHeld(b *testing.B, call func(context.Context)) {
	const n = 300
	var stacks, heap float64
	for b.Loop() {
		s, h := holdCalls(n, caddyFrames, call)
		stacks += s
		heap += h
	}
	b.ReportMetric(stacks/float64(b.N), "stack-KiB/held-call")
	b.ReportMetric(heap/float64(b.N), "heap-KiB/held-call")
}

// holdCalls makes n calls at once, each under pad bytes of frames, and
// returns the stacks and heap in use per call once they are held, in KiB.
func holdCalls(n, pad int, call func(context.Context)) (stacks, heap float64) {
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { padStack(pad/padFrame, func() { call(ctx) }) })
	}
	time.Sleep(time.Second)
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	cancel()
	wg.Wait()
	return float64(ms1.StackInuse-ms0.StackInuse) / 1024 / float64(n), float64(ms1.HeapAlloc-ms0.HeapAlloc) / 1024 / float64(n)
}

// stackMargin is how many bytes of frames can be added above Caddy's
// before a held call's stack doubles (to a padFrame), found by bisection
// on the stacks per held call: a doubled handler stack adds 16 KiB or
// more per call. Not used on BenchmarkHeldCallStack's actor runs: there
// it read -3,268 B while that benchmark's stacks showed a 16 KiB handler
// (the simulator's KeepRunning runs outlive each hold: a guess).
func stackMargin(call func(context.Context)) int {
	const n = 64
	holdCalls(n, 0, call) // the first hold also opens connections
	base, _ := holdCalls(n, 0, call)
	doubled := func(pad int) bool {
		s, _ := holdCalls(n, pad, call)
		return s > base+12
	}
	// The handler at no padding is at least 16 KiB: lo fits, hi does not.
	lo, hi := 0, 16384
	if doubled(caddyFrames) {
		hi = caddyFrames
	} else {
		lo = caddyFrames
	}
	for hi-lo > padFrame {
		mid := (lo + hi) / 2
		if doubled(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo - caddyFrames
}

// BenchmarkExtractActorRun is one whole pro_net/profile.info call on an
// actor run: its allocations are the garbage of a held call's answer
// (-benchmem; -memprofile shows where).
func BenchmarkExtractActorRun(b *testing.B) {
	a := heldAPI(b)
	b.ReportAllocs()
	for b.Loop() {
		if rec := a.heldCall(context.Background()); rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}
