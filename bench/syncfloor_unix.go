//go:build unix

package main

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// syncCost measures what one durable write costs this process in CPU on
// the filesystem of dir, as badger makes it: an msync(MS_SYNC) of a shared
// file mapping after writing a few KiB (dirty), and of a mapping with
// nothing written since the last (clean). Each badger commit syncs two
// such files, the value log's and the WAL's, so these bound from below
// what a synced commit costs, whatever the gateway's own code does.
func syncCost(dir string, n int) (dirty, clean time.Duration, err error) {
	f, err := os.CreateTemp(dir, "sync-floor-")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const size = 16 << 20
	if err := f.Truncate(size); err != nil {
		return 0, 0, err
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Munmap(data)
	cpu := func() time.Duration {
		u, s, _, _ := selfUsage()
		return u + s
	}
	const chunk = 6000 // a settle of a one-record run, about
	off := 0
	c0 := cpu()
	for i := 0; i < n; i++ {
		for j := off; j < off+chunk; j++ {
			data[j] = byte(i)
		}
		off = (off + chunk) % (size - chunk)
		if err := unix.Msync(data, unix.MS_SYNC); err != nil {
			return 0, 0, err
		}
	}
	c1 := cpu()
	for i := 0; i < n; i++ {
		if err := unix.Msync(data, unix.MS_SYNC); err != nil {
			return 0, 0, err
		}
	}
	c2 := cpu()
	return (c1 - c0) / time.Duration(n), (c2 - c1) / time.Duration(n), nil
}
