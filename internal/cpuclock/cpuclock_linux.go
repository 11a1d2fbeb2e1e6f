// Package cpuclock reads the calling thread's CPU clock, for the in-process
// comparisons of the benchmarks: on a machine other work loads, timing two
// variants by the clock counts the moments the thread waited for a core,
// which this clock does not. The caller locks its goroutine to its thread
// (runtime.LockOSThread) for the readings to be of one thread.
package cpuclock

import (
	"time"

	"golang.org/x/sys/unix"
)

// Thread is the CPU time of the calling OS thread so far
// (CLOCK_THREAD_CPUTIME_ID; a system call, not the vDSO).
func Thread() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
