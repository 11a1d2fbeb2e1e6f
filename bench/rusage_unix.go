//go:build unix

package main

import (
	"syscall"
	"time"
)

// selfUsage is this process's CPU time so far, user and system, and the
// bytes it has caused to be written to storage (ru_oublock, in 512-byte
// blocks on Linux: page cache writeback, msync and fsync included). ok is
// false when getrusage fails.
func selfUsage() (user, sys time.Duration, written int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, 0, false
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), int64(ru.Oublock) * 512, true
}
