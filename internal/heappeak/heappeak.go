// Package heappeak samples the Go heap in use while a benchmark runs, for
// the benchmarks that report its peak (`make bench` and the badger store's
// load benchmarks).
package heappeak

import (
	"runtime"
	"sync"
	"time"
)

// Sample reads runtime.MemStats.HeapInuse now and every interval until the
// returned stop is called; stop returns the highest value read, in bytes.
// stop must be called once.
func Sample(every time.Duration) (stop func() uint64) {
	var peak uint64 // written by the sampler alone, read after wg.Wait
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}
