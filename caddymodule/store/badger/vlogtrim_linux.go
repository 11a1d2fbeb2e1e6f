package badger

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const trimSupported = true

// trimVlog advises MADV_DONTNEED over the first limit bytes of every shared
// mapping of a value log file (NNNNNN.vlog) of dir, as /proc/self/maps
// lists them, and returns how many bytes of mappings it advised.
func trimVlog(dir string, limit uint64) (uint64, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	page := uint64(os.Getpagesize())
	var total uint64
	sc := bufio.NewScanner(bytes.NewReader(maps))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		start, size, ok := vlogMapping(sc.Text(), dir)
		if !ok {
			continue
		}
		n := min(size, limit) &^ (page - 1)
		if n == 0 {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(n), syscall.MADV_DONTNEED); errno != 0 {
			return total, errno
		}
		total += n
	}
	return total, sc.Err()
}

// vlogMapping parses one line of /proc/self/maps ("start-end perms offset
// dev inode path") and reports a shared mapping, from offset 0, of a value
// log file directly in dir.
func vlogMapping(line, dir string) (start, size uint64, ok bool) {
	f := line
	var fields [5]string
	for i := range fields {
		f = strings.TrimLeft(f, " ")
		var found bool
		fields[i], f, found = strings.Cut(f, " ")
		if !found {
			return 0, 0, false
		}
	}
	path := strings.TrimLeft(f, " ")
	if filepath.Dir(path) != dir || !isVlogName(filepath.Base(path)) {
		return 0, 0, false
	}
	perms, offset := fields[1], fields[2]
	if len(perms) != 4 || perms[3] != 's' || strings.Trim(offset, "0") != "" {
		return 0, 0, false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(lo, 16, 64)
	e, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return s, e - s, true
}

// isVlogName reports a value log file name: digits, then ".vlog".
func isVlogName(name string) bool {
	digits, ok := strings.CutSuffix(name, ".vlog")
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
