//go:build unix

package badger

import (
	"io/fs"
	"syscall"
)

// allocated is the disk space a file takes: its allocated blocks, so a
// sparse, preallocated file counts what was written.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
