//go:build !unix

package main

import "time"

// selfUsage is not measured outside Unix.
func selfUsage() (user, sys time.Duration, written int64, ok bool) { return 0, 0, 0, false }
