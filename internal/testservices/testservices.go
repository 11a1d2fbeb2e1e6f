// Package testservices holds the service declarations only tests load,
// with their example payloads, and copies them into a services directory:
//
//   - Probe (testdata/probe): ephemeral_net/sdr_test_probe.info, the
//     service reload and tools/list_changed tests add to see a service
//     appear. Its name is one no operator declares, so those tests hold
//     whatever services/ declares (they used to add pin_net/pin.info and
//     broke as soon as an operator declared it).
//   - Addition (testdata/addition): pin_net/pin.info (source_b with failover
//     to source_a) and shortvideo_net/profile.info (source_a), the two
//     services of an operator trial, which a test adds to a copy of
//     services/ to hold the declaration-driven tests to a valid addition.
package testservices

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

//go:embed testdata
var files embed.FS

// The sets of declarations.
const (
	Probe    = "probe"
	Addition = "addition"
)

// ProbeKey and ProbeTool name the probe service and its MCP tool.
const (
	ProbeKey  = "ephemeral_net/sdr_test_probe.info"
	ProbeTool = "ephemeral_net_sdr_test_probe_info"
)

// CopyServices copies the services directory src, declarations and
// examples, into dst.
func CopyServices(src, dst string) error {
	return copyTree(os.DirFS(src), dst)
}

// Add copies the declarations of set (Probe or Addition) into the services
// directory dir, and their examples under dir/examples. A service dir
// already declares (an operator added it meanwhile) is left as declared:
// its file is skipped, and its key returned in skipped.
func Add(dir, set string) (skipped []string, err error) {
	sub, err := fs.Sub(files, "testdata/"+set)
	if err != nil {
		return nil, err
	}
	declared, err := declaredKeys(dir)
	if err != nil {
		return nil, err
	}
	names, _ := fs.Glob(sub, "*.cue")
	skip := map[string]bool{}
	for _, n := range names {
		b, _ := fs.ReadFile(sub, n)
		for _, k := range keys(b) {
			if declared[k] {
				skip[n] = true
				skipped = append(skipped, k)
			}
		}
	}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if skip[p] {
			return nil
		}
		return copyFile(sub, p, filepath.Join(dir, filepath.FromSlash(p)))
	})
	return skipped, err
}

// Keys lists the service keys a set declares.
func Keys(set string) []string {
	var out []string
	names, _ := fs.Glob(files, "testdata/"+set+"/*.cue")
	for _, n := range names {
		b, _ := fs.ReadFile(files, n)
		out = append(out, keys(b)...)
	}
	return out
}

var keyRE = regexp.MustCompile(`(?m)^services:\s*"([a-z_]+/[a-z_.]+)"`)

func keys(cue []byte) []string {
	var out []string
	for _, m := range keyRE.FindAllSubmatch(cue, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

func declaredKeys(dir string) (map[string]bool, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.cue"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		for _, k := range keys(b) {
			out[k] = true
		}
	}
	return out, nil
}

func copyTree(fsys fs.FS, dst string) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return copyFile(fsys, p, filepath.Join(dst, filepath.FromSlash(p)))
	})
}

func copyFile(fsys fs.FS, p, to string) error {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		return fmt.Errorf("copying %s: %v", p, err)
	}
	return nil
}

// DirEnv names the environment variable that points the declaration-driven
// tests (registry, MCP tools, servicecheck) at another services directory
// than the repository's: the addition test runs them on a copy of
// services/ with services added, to prove they hold for any valid one.
const DirEnv = "SDR_TEST_SERVICES_DIR"

// ServicesFS is the services directory the declaration-driven tests read:
// the one DirEnv names, else def (the embedded services.FS).
func ServicesFS(def fs.FS) fs.FS {
	if d := os.Getenv(DirEnv); d != "" {
		return os.DirFS(d)
	}
	return def
}

// ServicesDir is the services directory path the declaration-driven tests
// copy: the one DirEnv names, else def.
func ServicesDir(def string) string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return def
}
