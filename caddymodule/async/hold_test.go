package async_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/store"
)

// TestHoldCPU measures what holding many parked runs costs a node while
// nothing happens (issue 38 item 2: flat from 10,000 to 100,000): it parks
// SDR_HOLD_RUNS runs (comma-separated levels, e.g. 10000,100000) in a
// badger store, each quiet for an hour as in callback mode, with the
// worker's loops at their defaults, and reports the process CPU a second
// and the GC cycles over SDR_HOLD_SECONDS (default 10), SDR_HOLD_WINDOWS
// times in a row (default 1), with a CPU profile of them all in
// $SDR_HOLD_PROFILE.<runs> if set. Skipped unless SDR_HOLD_RUNS is set.
func TestHoldCPU(t *testing.T) {
	levels := os.Getenv("SDR_HOLD_RUNS")
	if levels == "" {
		t.Skip("set SDR_HOLD_RUNS=10000,100000 to measure")
	}
	secs := 10
	if s, err := strconv.Atoi(os.Getenv("SDR_HOLD_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	for _, f := range strings.Split(levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			t.Fatalf("SDR_HOLD_RUNS: %q", f)
		}
		t.Run(strconv.Itoa(n), func(t *testing.T) { holdCPU(t, n, secs) })
	}
}

func holdCPU(t *testing.T, n, secs int) {
	s := openStore(t)
	p := quietParker{&parker{causes: map[string]error{}, resumed: map[string]bool{}}, time.Hour}
	w := async.New(async.Config{Store: s, Owner: "node-a"})
	w.SetRunner(p, p, nil)
	w.Start()
	defer w.Stop()
	// Runs stored parked as a run's Progress parks it: owner's, under the
	// node's heartbeat, due after the quiet hour; a document and a
	// resume record of a realistic size.
	doc := []byte(`{"status":"running","pad":"` + strings.Repeat("x", 1200) + `"}`)
	resume := []byte(`{"offer":"source_a/actor_6","started":[{"handle":"run:abcdefgh/dataset:ijklmnop"}]}`)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				now := time.Now()
				r := store.AsyncRun{ID: fmt.Sprintf("ext_%07d", i), AccountID: "acme", KeyID: "key_1", Request: []byte(`{"url":"x"}`),
					Doc: doc, Resume: resume, HoldPrice: 7, HoldRecords: 3, CreatedAt: now, Deadline: now.Add(2 * time.Hour),
					Owner: "node-a", LeaseUntil: store.NodeLease, DueAt: now.Add(time.Hour)}
				if err := s.CreateAsyncRun(t.Context(), r, 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d runs parked in %.1f s", n, time.Since(start).Seconds())
	runtime.GC()
	time.Sleep(3 * time.Second) // the loops' first rounds
	windows := 1
	if w, err := strconv.Atoi(os.Getenv("SDR_HOLD_WINDOWS")); err == nil && w > 0 {
		windows = w
	}
	if f := os.Getenv("SDR_HOLD_PROFILE"); f != "" {
		out, err := os.Create(fmt.Sprintf("%s.%d", f, n))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	for range windows {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0 := cpu()
		time.Sleep(time.Duration(secs) * time.Second)
		c1 := cpu()
		runtime.ReadMemStats(&m1)
		fmt.Printf("hold %7d runs: %.2f ms CPU/s, %d GC cycles, heap %.0f MiB, %.0f MiB returned to the OS, %d goroutines, %d checks\n", n,
			float64(c1-c0)/float64(time.Millisecond)/float64(secs), m1.NumGC-m0.NumGC, float64(m1.HeapAlloc)/(1<<20),
			float64(int64(m1.HeapReleased)-int64(m0.HeapReleased))/(1<<20), runtime.NumGoroutine(), p.checks.Load())
	}
}

// cpu is the process's user and system CPU time.
func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
