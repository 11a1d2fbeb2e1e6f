//go:build !linux

package main

import "syscall"

// childAttr has nothing to add outside Linux: children are stopped on
// every normal exit and on Ctrl-C.
func childAttr() *syscall.SysProcAttr { return nil }
