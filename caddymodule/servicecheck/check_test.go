package servicecheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"socialrouter/caddymodule/registry"
)

const checkBase = `package sdr

sources: {
	source_a: {name: "A", description: "actor runs", protocol: "actor_run"}
	source_b: {name: "B", description: "dataset scrapes", protocol: "dataset_scrape"}
}

#Prof: {
	name?:           string
	follower_count?: int
	joined_at?:      =~"^[0-9]{4}-[0-9]{2}-[0-9]{2}T"
}

services: "pro_net/profile.info": {
	platform:    "pro_net"
	service:     "profile.info"
	description: "A profile."
	input_kind:  "url"
	accepts: [{format: "https://example.com/in/<id>", example: "https://example.com/in/a", pattern: "https://example\\.com/in/[a-z]+"}]
	record: "#Prof"
	offers: [{
		offer: "source_a/actor_1", price_per_record: 0.001, max_inputs: 1, target: "act1"
		normalize: NORMALIZE
	}]
}
`

const goodItems = `[{"n": "Ann", "f": 12, "d": "2020-01-02T00:00:00Z"}, {"error": "gone"}]`

// TestDeclaredExamplesPass: every live offer of services/ has an example
// that normalizes to records on its schema, with both engines agreeing,
// and survives the robustness mutations.
func TestDeclaredExamplesPass(t *testing.T) {
	reg, err := registry.LoadFS(svcFS)
	if err != nil {
		t.Fatal(err)
	}
	if probs := Check(context.Background(), reg, svcFS); len(probs) != 0 {
		t.Fatalf("%d problems: %v", len(probs), probs)
	}
}

// TestSlowOffers: check notes an offer the compiled plan cannot run, and
// none of the declared ones.
func TestSlowOffers(t *testing.T) {
	reg, err := registry.LoadFS(svcFS)
	if err != nil {
		t.Fatal(err)
	}
	if slow := SlowOffers(reg); len(slow) != 0 {
		t.Errorf("declared offers off the plan: %v", slow)
	}
	reg, err = registry.LoadFiles(map[string][]byte{"services/x.cue": []byte(strings.Replace(checkBase, "NORMALIZE",
		`"{name: .n, follower_count: (.f | toint)} | del(.name)"`, 1))})
	if err != nil {
		t.Fatal(err)
	}
	slow := SlowOffers(reg)
	if len(slow) != 1 || !strings.Contains(slow[0], "source_a/actor_1 of pro_net/profile.info normalizes on gojq") || !strings.Contains(slow[0], "del(f)") {
		t.Errorf("SlowOffers = %q", slow)
	}
}

func TestCheckExamplesRefuses(t *testing.T) {
	const example = "examples/source_a/pro_net__profile.info.json"
	good := `"if type != \"object\" or .n == null then empty else {name: (.n | if type == \"string\" then . else null end), follower_count: (.f | toint), joined_at: (.d | iso8601)} end"`
	cases := []struct {
		name, normalize, file, items string
		want                         string // "" means no problem
	}{
		{"good", good, example, goodItems, ""},
		{"the offer's own example wins", good, "examples/source_a/pro_net__profile.info__actor_1.json", goodItems, ""},
		{"no example", good, "examples/source_b/pro_net__profile.info.json", goodItems, "no example payload (add examples/source_a/pro_net__profile.info.json)"},
		{"no record", `"empty"`, example, goodItems, "no record from 2 items"},
		{"undeclared field", `"{name: .n, followers: .f}"`, example, goodItems, "services/x.cue:23:26: examples/source_a/pro_net__profile.info.json: offer pro_net/profile.info source_a/actor_1: item 0: record off #Prof: followers: undeclared field"},
		{"count as a string", `"{name: .n, follower_count: (.f | tostring)}"`, example, goodItems, `follower_count: want integer, got a string`},
		{"date not ISO 8601", `"{name: .n, joined_at: \"02/01/2020\"}"`, example, goodItems, "joined_at: \"02/01/2020\" does not match"},
		{"normalize error", `"{name: (.n | error)}"`, example, goodItems, "item 0: normalize error: "},
		{"not an array", good, example, `"text"`, "neither a JSON array"},
		{"a data item dropped", `"if .n == \"Ann\" then empty else {name: .n} end"`, example, `[{"n": "Ann"}, {"n": "Bob"}]`,
			`item 0: a data item gave no record: dropped by if .n == "Ann" then empty`},
		{"a type mutation breaks the schema", `"{name: .n, follower_count: .f}"`, example, `[{"n": "Ann", "f": 12}]`,
			`robustness: item 0 with .f = "x": record off #Prof: follower_count: want integer, got a string`},
		{"an item with no data gives a record", `"{name: .n?}"`, example, `[{"n": "Ann"}]`,
			`robustness: the item {} (no data) gave the record {}`},
		{"a type mutation fails the normalizer", `"{name: (.n | ascii_downcase)}"`, example, `[{"n": "Ann"}]`,
			`robustness: item 0 with .n = null: normalize: ascii_downcase cannot be applied`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := registry.LoadFiles(map[string][]byte{"services/x.cue": []byte(strings.Replace(checkBase, "NORMALIZE", tc.normalize, 1))})
			if err != nil {
				t.Fatal(err)
			}
			fsys := fstest.MapFS{tc.file: {Data: []byte(tc.items)}}
			probs := Check(context.Background(), reg, fsys)
			if tc.want == "" {
				if len(probs) != 0 {
					t.Fatalf("problems %v", probs)
				}
				return
			}
			var all []string
			for _, p := range probs {
				all = append(all, p.String())
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Fatalf("problems %q, want one saying %q", all, tc.want)
			}
			// What the example itself breaks is not reported again as a
			// mutation's.
			if tc.name == "undeclared field" && regexp.MustCompile(`robustness: item 0 with [^:]*: record off #Prof: followers`).MatchString(strings.Join(all, "\n")) {
				t.Errorf("a mutation repeats the example's own problem: %q", all)
			}
			if probs[0].Offer != "pro_net/profile.info source_a/actor_1" {
				t.Errorf("problem names offer %q", probs[0].Offer)
			}
			// Each problem leads with the CUE position of the offer's
			// normalize program, or of the word in it at fault.
			line := 1 + strings.Count(checkBase[:strings.Index(checkBase, "NORMALIZE")], "\n")
			for _, p := range all {
				if !strings.HasPrefix(p, fmt.Sprintf("services/x.cue:%d:", line)) {
					t.Errorf("problem does not lead with the normalize program's line %d: %s", line, p)
				}
			}
		})
	}
}

func TestDisagreement(t *testing.T) {
	cases := []struct {
		name   string
		rec    string
		ok     bool
		err    error
		ref    any
		refErr error
		want   string
	}{
		{"same record, nulls left out", `{"a":1}`, true, nil, map[string]any{"a": 1.0, "b": nil}, nil, ""},
		{"both drop", "", false, nil, nil, nil, ""},
		{"different value", `{"a":1}`, true, nil, map[string]any{"a": 2.0}, nil, "gateway made"},
		{"only gojq makes a record", "", false, nil, map[string]any{"a": 2.0}, nil, "the gateway drops the item"},
		{"only one fails", `{"a":1}`, true, nil, nil, os.ErrInvalid, "gojq error"},
	}
	for _, tc := range cases {
		got := disagreement([]byte(tc.rec), tc.ok, tc.err, tc.ref, tc.refErr)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTry: the offline dry run prints each record and each violation, and
// fails when a record would not be served.
func TestTry(t *testing.T) {
	reg, err := registry.LoadFiles(map[string][]byte{"services/x.cue": []byte(strings.Replace(checkBase, "NORMALIZE",
		`"if .error then empty else {name: .n, follower_count: .f} end"`, 1))})
	if err != nil {
		t.Fatal(err)
	}
	payload := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(payload, []byte(`[{"n": "Ann", "f": 12}, {"n": "Bob", "f": "12"}, {"error": "x"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Try(&out, reg, "pro_net/profile.info", "", payload, "https://example.com/in/z")
	if err == nil || !strings.Contains(err.Error(), "problem(s): the gateway would refuse this example") {
		t.Errorf("error %v", err)
	}
	for _, want := range []string{
		`offer source_a/actor_1 on the compiled fast path, $input "https://example.com/in/z", 3 items`,
		"item 0: record\n",
		`"name": "Ann"`,
		"item 1: record off its schema (never served nor billed)\n",
		"services/x.cue:23:52: item 1: record off #Prof: follower_count: want integer, got a string (never served nor billed: fix the program's key or the record definition)",
		"services/x.cue:23:14: note: item 2: error row (never a record)",
		"3 items, 1 records, ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, bad := range []struct{ key, offer, want string }{
		{"pro_net/nope", "", "no service"},
		{"pro_net/profile.info", "source_z/x", `has no offer "source_z/x" (declared: source_a/actor_1)`},
	} {
		if err := Try(&out, reg, bad.key, bad.offer, payload, ""); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Try(%s, %s) = %v, want %q", bad.key, bad.offer, err, bad.want)
		}
	}
}

// TestTryEveryItemDropped: a normalizer that keeps nothing of a payload
// fails try, naming the expression that dropped the items and where it is.
func TestTryEveryItemDropped(t *testing.T) {
	reg, err := registry.LoadFiles(map[string][]byte{"services/x.cue": []byte(strings.Replace(checkBase, "NORMALIZE",
		`"if .name == null then empty else {name: .name} end"`, 1))})
	if err != nil {
		t.Fatal(err)
	}
	payload := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(payload, []byte(`[{"n": "Ann"}, {"n": "Bob"}, {"error": "x"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Try(&out, reg, "pro_net/profile.info", "", payload, "")
	if err == nil || !strings.Contains(err.Error(), "problem(s)") {
		t.Errorf("error %v", err)
	}
	for _, want := range []string{
		"services/x.cue:23:37: item 0: a data item gave no record: dropped by if .name == null then empty",
		"services/x.cue:23:14: no record from 3 items",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestLoadRefusesWhatCheckRefuses: the gateway's loader refuses a services
// directory whose example fails the check (here a type mutation), each
// problem leading with its CUE position, and loads a good one.
func TestLoadRefusesWhatCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("x.cue", strings.Replace(checkBase, "NORMALIZE", `"if type != \"object\" or .n == null then empty else {name: .n, follower_count: .f} end"`, 1))
	write("examples/source_a/pro_net__profile.info.json", `[{"n": "Ann", "f": 12}]`)
	_, err := Load(context.Background(), dir)
	want := filepath.Join(dir, "x.cue") + ":23:78: " + filepath.Join(dir, "examples/source_a/pro_net__profile.info.json") + ": offer pro_net/profile.info source_a/actor_1: robustness: item 0 with .f = \"x\""
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Load error %v\nwant it to start with %s", err, want)
	}
	write("x.cue", strings.Replace(checkBase, "NORMALIZE", `"if type != \"object\" or .n == null then empty else {name: (.n | if type == \"string\" then . else null end), follower_count: (.f | toint)} end"`, 1))
	if reg, err := Load(context.Background(), dir); err != nil || len(reg.Services) != 1 {
		t.Fatalf("Load of a good directory: %v", err)
	}
}

// TestCheckDirLines: each line sdr check prints leads with the CUE
// position, then the example's path inside the checked directory.
func TestCheckDirLines(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.cue"), []byte(strings.Replace(checkBase, "NORMALIZE", `"{name: .n, followers: .f}"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "examples", "source_a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "examples", "source_a", "pro_net__profile.info.json"), []byte(goodItems), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := CheckDir(&out, reg, dir); err == nil {
		t.Fatal("CheckDir passed an undeclared field")
	}
	want := filepath.Join(dir, "x.cue") + ":23:26: " + filepath.Join(dir, "examples", "source_a", "pro_net__profile.info.json") + ": offer pro_net/profile.info source_a/actor_1: item 0: record off #Prof: followers: undeclared field (never served nor billed: fix the program's key or the record definition)\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("CheckDir printed\n%s\nwant it to start with\n%s", out.String(), want)
	}
}
