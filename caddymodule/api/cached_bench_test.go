package api

import (
	"encoding/json"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"socialrouter/caddymodule/cache"
)

// The freshness cache's hit against GET /v1/extractions/{id} of its
// record, in process (make bench section 13 measures it on the binary):
// go test -run X -bench 'CachedHit|GetCachedRun' ./caddymodule/api
// reports the process's CPU µs per call (user + system, getrusage) with
// 16 callers, as the bench's load generator makes them.

// cachedAPI is the test API on an in-process simulator with the cache,
// and the id of a run served from it.
func cachedAPI(b *testing.B) (*testAPI, string) {
	a := heldAPI(b)
	a.Cache = cache.New(a.store, 0, time.Minute)
	var runID string
	for i := range 2 {
		rec := a.cachedCall()
		var run struct {
			ID            string `json:"id"`
			CachedRecords int    `json:"cached_records"`
		}
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &run) != nil || (i == 1) != (run.CachedRecords == 1) {
			b.Fatalf("call %d: %d %s", i, rec.Code, rec.Body)
		}
		runID = run.ID
	}
	return a, runID
}

func (a *testAPI) cachedCall() *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/v1/extract/pro_net/profile.info",
		strings.NewReader(`{"url":"https://www.linkedin.com/in/rbranson"}`))
	r.Header.Set("Authorization", "Bearer "+a.secret)
	r.Header.Set("Cache-Control", "max-age=3600")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, r)
	return rec
}

// cpuPerOp runs call from 16 goroutines and reports the process's CPU
// per call, and the writes each badger transaction carried.
func cpuPerOp(b *testing.B, a *testAPI, call func() int) {
	batcher := a.store.(interface{ Batches() (int64, int64) })
	t0, w0 := batcher.Batches()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if code := call(); code != 200 {
				b.Errorf("status %d", code)
				return
			}
		}
	})
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	if t1, w1 := batcher.Batches(); t1 > t0 {
		b.ReportMetric(float64(w1-w0)/float64(t1-t0), "writes/txn")
	}

}

func BenchmarkCachedHit(b *testing.B) {
	a, _ := cachedAPI(b)
	b.ReportAllocs()
	cpuPerOp(b, a, func() int { return a.cachedCall().Code })
}

func BenchmarkGetCachedRun(b *testing.B) {
	a, id := cachedAPI(b)
	b.ReportAllocs()
	cpuPerOp(b, a, func() int {
		r := httptest.NewRequest("GET", "/v1/extractions/"+id, nil)
		r.Header.Set("Authorization", "Bearer "+a.secret)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, r)
		return rec.Code
	})
}
