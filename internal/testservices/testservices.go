// Package testservices holds the service declarations only tests load,
// with their example payloads, and copies them into a services directory
// without ever replacing what an operator has there:
//
//   - Probe (testdata/probe): ephemeral_net/sdr_test_probe.info, the
//     service reload and tools/list_changed tests add to see a service
//     appear.
//   - Swap (testdata/swap): open_net/sdr_test_swap.info, the service the
//     registry-swap tests add, break and remove.
//   - Operator (testdata/operator): services as an operator would declare
//     them, in the files an operator would name after their platforms
//     (open_net.cue, pin_net.cue, shortvideo_net.cue, with a search type no
//     SPEC names), which the addition tests add to a copy of services/ to
//     hold the declaration-driven tests to any valid addition.
//
// The test-only names (files, service names, offers, targets, record
// definitions) start with sdr_test_ (SdrTest in CUE definitions): names an
// operator never chooses (docs/add-a-service.md reserves them). The
// operator set uses natural names on purpose, so Add copies a file only
// where its name, its services and its examples are all free.
package testservices

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

//go:embed testdata
var files embed.FS

// The sets of declarations.
const (
	Probe    = "probe"
	Swap     = "swap"
	Operator = "operator"
)

// ProbeKey and ProbeTool name the probe service and its MCP tool.
const (
	ProbeKey  = "ephemeral_net/sdr_test_probe.info"
	ProbeTool = "ephemeral_net_sdr_test_probe_info"
)

// SwapKey, SwapTool, SwapFile and SwapExample name the swap service, its
// MCP tool, its declaration file and its example (relative to a services
// directory).
const (
	SwapKey     = "open_net/sdr_test_swap.info"
	SwapTool    = "open_net_sdr_test_swap_info"
	SwapFile    = "sdr_test_swap.cue"
	SwapExample = "examples/source_b/open_net__sdr_test_swap.info.json"
)

// File is the content of a file of set (a path relative to the set, as in a
// services directory), for tests that write it themselves.
func File(set, name string) []byte {
	b, err := fs.ReadFile(files, path.Join("testdata", set, name))
	if err != nil {
		panic(err) // a test names a file the set does not have
	}
	return b
}

// CopyServices copies the services directory src, declarations and
// examples, into dst.
func CopyServices(src, dst string) error {
	return copyTree(os.DirFS(src), dst)
}

// Add copies the declaration files of set into the services directory dir,
// each with its examples under dir/examples, and never replaces anything
// dir holds: a file is added only when its name, every service it declares
// and every example of those services are free in dir (or already hold
// exactly this content, as after an earlier Add). Otherwise the file and
// its examples are skipped, each reason returned in skipped, and what the
// operator declared is tested instead.
func Add(dir, set string) (skipped []string, err error) {
	sub, err := fs.Sub(files, "testdata/"+set)
	if err != nil {
		return nil, err
	}
	names, _ := fs.Glob(sub, "*.cue")
	examples, err := exampleFiles(sub)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		b, _ := fs.ReadFile(sub, n)
		declared, err := declaredKeys(dir, n)
		if err != nil {
			return nil, err
		}
		copies := []string{n}
		var taken []string
		if different(dir, n, b) {
			taken = append(taken, "the operator's "+n+" is kept")
		}
		for _, k := range keys(b) {
			if at, ok := declared[k]; ok {
				taken = append(taken, k+" is declared in "+at)
			}
			for _, ex := range examples[k] {
				if eb, _ := fs.ReadFile(sub, ex); different(dir, ex, eb) {
					taken = append(taken, "the operator's "+ex+" is kept")
				}
				copies = append(copies, ex)
			}
		}
		if len(taken) > 0 {
			skipped = append(skipped, fmt.Sprintf("%s (%s) not added: %s", n, strings.Join(keys(b), ", "), strings.Join(taken, "; ")))
			continue
		}
		for _, p := range copies {
			if err := copyFile(sub, p, filepath.Join(dir, filepath.FromSlash(p))); err != nil {
				return skipped, err
			}
		}
	}
	return skipped, nil
}

// different reports whether dir holds a file at p other than b.
func different(dir, p string, b []byte) bool {
	have, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return err != nil || !bytes.Equal(have, b)
}

// exampleFiles maps a service key to the example files of a set
// (examples/<source>/<platform>__<service>[__<offer>].json).
func exampleFiles(sub fs.FS) (map[string][]string, error) {
	out := map[string][]string{}
	err := fs.WalkDir(sub, "examples", func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == "examples" {
			return fs.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		parts := strings.Split(strings.TrimSuffix(path.Base(p), ".json"), "__")
		if len(parts) < 2 {
			return fmt.Errorf("example %s is not named <platform>__<service>.json", p)
		}
		k := parts[0] + "/" + parts[1]
		out[k] = append(out[k], p)
		return nil
	})
	return out, err
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

// keyRE finds a service key as services: "<key>": or, inside a services
// struct, "<key>": at the start of a line.
var keyRE = regexp.MustCompile(`(?m)^\s*(?:services:\s*)?"([a-z][a-z0-9_]*/[a-z][a-z0-9_.]*)"\s*:`)

func keys(cue []byte) []string {
	var out []string
	for _, m := range keyRE.FindAllSubmatch(cue, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// declaredKeys maps the service keys the *.cue files of dir declare to
// their file, except the file named except (which Add compares whole).
func declaredKeys(dir, except string) (map[string]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.cue"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		if filepath.Base(n) == except {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		for _, k := range keys(b) {
			out[k] = filepath.Base(n)
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
