package main

import "syscall"

// childAttr makes the kernel kill a child if the benchmark dies without
// stopping it (SIGKILL from outside, a crash).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
