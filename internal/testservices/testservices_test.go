package testservices

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddNeverReplacesTheOperators: Add copies a file only where its name,
// its services and their examples are free, leaves every byte the operator
// has, and adds the same set twice without a complaint.
func TestAddNeverReplacesTheOperators(t *testing.T) {
	opShort := []byte("package sdr\n\n// the operator's own\nservices: \"shortvideo_net/post.info\": {}\n")
	opPin := []byte("package sdr\n\nservices: {\n\t\"pin_net/pin.info\": {}\n}\n")
	opExample := []byte(`[{"operator": true}]`)
	for _, tc := range []struct {
		name      string
		have      map[string][]byte
		wantAdded []string // files of the set that must be copied
		wantSkip  []string // a substring of a skip reason each
	}{
		{"empty directory", nil,
			[]string{"open_net.cue", "pin_net.cue", "shortvideo_net.cue", "examples/source_a/shortvideo_net__video.search.json"}, nil},
		{"the operator's file of the same name", map[string][]byte{"shortvideo_net.cue": opShort},
			[]string{"open_net.cue", "pin_net.cue"}, []string{"the operator's shortvideo_net.cue is kept"}},
		{"the operator's service in another file", map[string][]byte{"pins.cue": opPin},
			[]string{"open_net.cue", "shortvideo_net.cue"}, []string{"pin_net/pin.info is declared in pins.cue"}},
		{"the operator's example", map[string][]byte{"examples/source_b/open_net__profile.posts.json": opExample},
			[]string{"pin_net.cue", "shortvideo_net.cue"}, []string{"the operator's examples/source_b/open_net__profile.posts.json is kept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, b := range tc.have {
				write(t, filepath.Join(dir, p), b)
			}
			skipped, err := Add(dir, Operator)
			if err != nil {
				t.Fatal(err)
			}
			if len(skipped) != len(tc.wantSkip) {
				t.Fatalf("skipped %q, want %d", skipped, len(tc.wantSkip))
			}
			for i, w := range tc.wantSkip {
				if !strings.Contains(skipped[i], w) {
					t.Errorf("skip reason %q lacks %q", skipped[i], w)
				}
			}
			for p, b := range tc.have {
				if got, _ := os.ReadFile(filepath.Join(dir, p)); !bytes.Equal(got, b) {
					t.Errorf("the operator's %s was replaced", p)
				}
			}
			for _, p := range tc.wantAdded {
				if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || !bytes.Equal(got, File(Operator, p)) {
					t.Errorf("%s not added: %v", p, err)
				}
			}
			if again, err := Add(dir, Operator); err != nil || len(again) != len(skipped) {
				t.Errorf("adding again: skipped %q, %v", again, err)
			}
		})
	}
}

// TestTestOnlyNamesAreReserved: the probe and swap sets use only the names
// docs/add-a-service.md reserves for tests (sdr_test_…), so they can never
// meet an operator's.
func TestTestOnlyNamesAreReserved(t *testing.T) {
	for _, set := range []string{Probe, Swap} {
		ex, err := exampleFiles(mustSub(t, set))
		if err != nil {
			t.Fatal(err)
		}
		names, _ := fs.Glob(mustSub(t, set), "*.cue")
		for _, n := range names {
			if !strings.HasPrefix(n, "sdr_test_") {
				t.Errorf("%s: file %s is not under a reserved name", set, n)
			}
		}
		for _, k := range Keys(set) {
			if _, name, _ := strings.Cut(k, "/"); !strings.HasPrefix(name, "sdr_test_") {
				t.Errorf("%s: service %s is not under a reserved name", set, k)
			}
			if len(ex[k]) == 0 {
				t.Errorf("%s: service %s has no example", set, k)
			}
		}
	}
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSub(t *testing.T, set string) fs.FS {
	t.Helper()
	sub, err := fs.Sub(files, "testdata/"+set)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}
