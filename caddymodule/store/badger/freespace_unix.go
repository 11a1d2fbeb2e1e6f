//go:build unix

package badger

import "golang.org/x/sys/unix"

// freeSpace is the space an unprivileged process may still write on
// dir's filesystem (statfs f_bavail).
func freeSpace(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
