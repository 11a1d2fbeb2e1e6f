//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// raiseFileLimit raises this process's open-file limit (RLIMIT_NOFILE) to
// at least want where the kernel lets it, and the soft limit to the hard
// one; the simulator and the gateway inherit it. Calling Setrlimit also
// stops os/exec from restoring the original soft limit in children. It
// returns the limits now in effect, and a note when want is out of reach.
func raiseFileLimit(want uint64) (soft, hard uint64, note string) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Sprintf("reading the file limit: %v", err)
	}
	if lim.Max < want {
		// Only a privileged process (CAP_SYS_RESOURCE) may raise its hard limit.
		up := syscall.Rlimit{Cur: want, Max: want}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up); err == nil {
			lim = up
		} else {
			note = fmt.Sprintf("the hard limit %d could not be raised to %d (%v): run under ulimit -Hn %d or systemd LimitNOFILE=%d",
				lim.Max, want, err, want, want)
		}
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		note = fmt.Sprintf("raising the soft file limit: %v", err)
	}
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	return uint64(lim.Cur), uint64(lim.Max), note
}
