package cpuclock

import (
	"runtime"
	"testing"
	"time"
)

// TestThreadCounts: the clock advances while the thread computes and
// hardly while it sleeps.
func TestThreadCounts(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := Thread()
	x := 0
	for wall := time.Now(); time.Since(wall) < 20*time.Millisecond; {
		x++
	}
	busy := Thread() - start
	if busy <= 0 || x == 0 {
		t.Fatalf("busy 20 ms: thread clock advanced %v", busy)
	}
	if runtime.GOOS != "linux" {
		return
	}
	start = Thread()
	time.Sleep(50 * time.Millisecond)
	if slept := Thread() - start; slept > 25*time.Millisecond {
		t.Errorf("sleeping 50 ms: thread clock advanced %v", slept)
	}
}
