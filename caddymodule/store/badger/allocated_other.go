//go:build !unix

package badger

import "io/fs"

// allocated is the disk space a file takes; here, its size.
func allocated(info fs.FileInfo) int64 { return info.Size() }
