//go:build !unix

package main

// raiseFileLimit has nothing to raise outside Unix.
func raiseFileLimit(want uint64) (soft, hard uint64, note string) {
	return 0, 0, "no file limit on this system"
}
