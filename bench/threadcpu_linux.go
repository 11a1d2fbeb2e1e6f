package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time of the calling OS thread so far (the caller
// locks its goroutine to it): on a machine other work loads, the in-process
// comparisons time their variants by it rather than by the clock, which
// also counts the moments the thread waited for a core.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
