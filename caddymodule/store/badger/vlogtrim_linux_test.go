package badger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// vlogResident sums the resident bytes of the mappings of dir's value log
// files, from /proc/self/smaps.
func vlogResident(t *testing.T, dir string) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatalf("reading /proc/self/smaps: %v", err)
	}
	defer f.Close()
	var total uint64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if name, rest, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, " ") && !strings.Contains(name, "-") {
			if in && name == "Rss" {
				kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				total += kb << 10
			}
			continue
		}
		_, _, in = vlogMapping(line, dir)
	}
	return total
}

// bigRun is a run whose document (about 30 KiB) goes to the value log.
func bigRun(i int) *runs.Run {
	rec := json.RawMessage(`{"about":"` + strings.Repeat(strconv.Itoa(i%10), 3000) + `"}`)
	data := make([]json.RawMessage, 10)
	for j := range data {
		data[j] = rec
	}
	return &runs.Run{ID: fmt.Sprint("ext_", i), Status: "completed", AccountID: "acme", KeyID: "key_1", Data: data}
}

// TestVlogTrim checks that trimming drops the value log's pages from the
// resident set and that every run still reads back whole, also while
// settles, reads and trims run concurrently, and after a reopen.
func TestVlogTrim(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.trim == nil {
		t.Fatal("no trimmer on Linux")
	}
	ctx := t.Context()
	if _, err := s.CreateAccount(ctx, "acme", 1<<50, t0); err != nil {
		t.Fatal(err)
	}
	settleRange := func(from, to int) error {
		for i := from; i < to; i++ {
			if _, err := s.Settle(ctx, store.Settlement{Run: bigRun(i), Price: 1, Offer: "o", Platform: "p", Now: t0}); err != nil {
				return err
			}
		}
		return nil
	}
	check := func(s *Store, n int) error {
		for i := range n {
			want, err := json.Marshal(func() runs.Run { r := *bigRun(i); r.CreditsUsed = 10; r.Pagination.Returned = 10; return r }())
			if err != nil {
				return err
			}
			got, err := s.GetRunJSON(ctx, nil, "acme", fmt.Sprint("ext_", i))
			if err != nil {
				return err
			}
			if !bytes.Equal(got, want) {
				return fmt.Errorf("run %d reads back as %.80s…", i, got)
			}
		}
		return nil
	}

	if err := settleRange(0, 100); err != nil {
		t.Fatal(err)
	}
	before := vlogResident(t, s.trim.dir)
	s.trim.trim()
	after := vlogResident(t, s.trim.dir)
	t.Logf("value log resident: %d KiB before the trim, %d KiB after", before>>10, after>>10)
	if s.trim.trimmed.Load() == 0 || after > 1<<20 {
		t.Errorf("trim advised %d bytes; value log resident %d KiB before, %d KiB after; want under 1 MiB", s.trim.trimmed.Load(), before>>10, after>>10)
	}
	if err := check(s, 100); err != nil {
		t.Fatal(err)
	}

	// Concurrently: settles, reads and trims.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	stop := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- settleRange(100+w*150, 100+(w+1)*150)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			if err := check(s, 100); err != nil {
				errs <- err
				return
			}
		}
	}()
	trims := make(chan struct{})
	go func() {
		defer close(trims)
		for {
			select {
			case <-stop:
				return
			default:
				s.trim.trim()
			}
		}
	}()
	e1, e2 := <-errs, <-errs
	close(stop)
	wg.Wait()
	<-trims
	close(errs)
	for _, err := range append([]error{e1, e2}, <-errs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := check(s, 400); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := check(s, 400); err != nil {
		t.Fatalf("after reopening: %v", err)
	}
}

// TestVlogMapping checks which /proc/self/maps lines are taken for value
// log mappings.
func TestVlogMapping(t *testing.T) {
	cases := []struct {
		line  string
		start uint64
		size  uint64
		ok    bool
	}{
		{"7f0000000000-7f0000400000 rw-s 00000000 fe:00 123 /d/000001.vlog", 0x7f0000000000, 0x400000, true},
		{"7f0000000000-7f0000400000 rw-s 00000000 fe:00 123      /d/000012.vlog", 0x7f0000000000, 0x400000, true},
		{"7f0000000000-7f0000400000 r--s 00000000 fe:00 123 /d/000001.vlog", 0x7f0000000000, 0x400000, true},
		{"7f0000000000-7f0000400000 rw-p 00000000 fe:00 123 /d/000001.vlog", 0, 0, false}, // private: never
		{"7f0000000000-7f0000400000 rw-s 00001000 fe:00 123 /d/000001.vlog", 0, 0, false}, // not from offset 0
		{"7f0000000000-7f0000400000 rw-s 00000000 fe:00 123 /d/000001.vlog (deleted)", 0, 0, false},
		{"7f0000000000-7f0000400000 rw-s 00000000 fe:00 123 /d/00001.mem", 0, 0, false},
		{"7f0000000000-7f0000400000 rw-s 00000000 fe:00 123 /d/000001.sst", 0, 0, false},
		{"7f0000000000-7f0000400000 rw-s 00000000 fe:00 123 /other/000001.vlog", 0, 0, false},
		{"7f0000000000-7f0000400000 rw-s 00000000 fe:00 123 /d/sub/000001.vlog", 0, 0, false},
		{"7f0000000000-7f0000400000 rw-s 00000000 fe:00 123 /d/x.vlog", 0, 0, false},
		{"7f0000000000-7f0000400000 rw-p 00000000 00:00 0", 0, 0, false},
		{"garbage", 0, 0, false},
	}
	for _, tc := range cases {
		start, size, ok := vlogMapping(tc.line, "/d")
		if ok != tc.ok || start != tc.start || size != tc.size {
			t.Errorf("vlogMapping(%q) = %#x, %#x, %v; want %#x, %#x, %v", tc.line, start, size, ok, tc.start, tc.size, tc.ok)
		}
	}
}

// TestVlogMappingsAreWhatTrimExpects is the guard on trimVlog's reading of
// badger: it advises memory it finds through /proc/self/maps, on what badger
// v4 does today (every value log file mapped shared from offset 0, once; the
// file being written mapped at twice ValueLogFileSize; sealed files at least
// as large as themselves). A badger upgrade that maps them otherwise fails
// here, not silently in production.
func TestVlogMappingsAreWhatTrimExpects(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateAccount(t.Context(), "acme", 1<<50, t0); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := s.Settle(t.Context(), store.Settlement{Run: bigRun(i), Price: 1, Offer: "o", Platform: "p", Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join(s.trim.dir, "*.vlog"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no value log files in %s (%v): badger no longer keeps values in NNNNNN.vlog files", s.trim.dir, err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	page := uint64(os.Getpagesize())
	mapped := map[string][]uint64{} // file -> sizes of the mappings trimVlog takes
	for line := range strings.Lines(string(maps)) {
		line = strings.TrimSuffix(line, "\n")
		if !strings.Contains(line, s.trim.dir) || !strings.HasSuffix(line, ".vlog") {
			continue
		}
		_, size, ok := vlogMapping(line, s.trim.dir)
		if !ok {
			t.Errorf("badger maps a value log file in a form trimVlog skips (private, or not from offset 0): %q", line)
			continue
		}
		f := line[strings.LastIndex(line, " ")+1:]
		mapped[f] = append(mapped[f], size)
	}
	latest := files[len(files)-1] // Glob sorts; the names are zero-padded numbers
	for _, f := range files {
		sizes := mapped[f]
		if len(sizes) != 1 {
			t.Errorf("%s is mapped %d times, want once", filepath.Base(f), len(sizes))
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if sizes[0] < uint64(fi.Size())&^(page-1) {
			t.Errorf("%s: mapping of %d bytes is smaller than the file (%d): trimVlog could advise past a remap", filepath.Base(f), sizes[0], fi.Size())
		}
		if f == latest && sizes[0] < 2*s.trim.limit {
			t.Errorf("%s (being written): mapped at %d bytes, want 2 × ValueLogFileSize = %d: badger's growth rule changed", filepath.Base(f), sizes[0], 2*s.trim.limit)
		}
	}
}
