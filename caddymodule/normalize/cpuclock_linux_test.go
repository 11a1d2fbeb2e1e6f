package normalize_test

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling OS thread's CPU time so far: fpRatio times its
// passes by it (the goroutine locked to the thread), so that on a loaded
// machine the moments the thread waited for a core count for neither side.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
