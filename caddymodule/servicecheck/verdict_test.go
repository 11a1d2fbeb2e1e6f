package servicecheck

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"socialrouter/caddymodule/registry"
)

// TestTryAndCheckAgree: sdr try and sdr check give one verdict on every
// item: the same problems, each with the same message (and its fix), at
// the same file:line:column, and both fail on exactly those; a note (an
// error row, an item with no data) fails neither.
func TestTryAndCheckAgree(t *testing.T) {
	const guard = `if type != \"object\" or .n == null then empty else `
	for _, tc := range []struct {
		name, normalize, items string
		want                   []string // a substring of a problem each; none: both pass
	}{
		{"good, with an error row and an item of nulls",
			`"` + guard + `{name: (.n | if type == \"string\" then . else null end)} end"`, `[{"n": "Ann"}, {"error": "gone"}, {"n": null, "f": null}]`, nil},
		{"a data item dropped by the guard",
			`"` + guard + `{name: (.n | if type == \"string\" then . else null end)} end"`, `[{"n": "Ann"}, {"f": 3}]`,
			[]string{`x.cue:23:56: item 1: a data item gave no record: dropped by if type != "object" or .n == null then empty (keep it there`}},
		{"a record dropped by an as binding",
			`"` + guard + `(.a | objects) as $a | {name: (.n | if type == \"string\" then . else null end), follower_count: ($a.c | toint)} end"`, `[{"n": "Ann", "a": {"c": 1}}, {"n": "Bob", "a": "x"}]`,
			[]string{`x.cue:23:73: item 1: a data item gave no record: dropped by (.a | objects) as $a (objects yields nothing)`}},
		{"a record dropped inside an object",
			`"` + guard + `{name: (.n | if type == \"string\" then . else null end), follower_count: (.a?.c? | toint)} end"`, `[{"n": "Ann", "a": {"c": 1}}, {"n": "Bob", "a": "x"}]`,
			[]string{`item 1: a data item gave no record: dropped by {…, follower_count: (.a?.c? | toint), …}`}},
		{"a record off its schema",
			`"` + guard + `{name: (.n | if type == \"string\" then . else null end), follower_count: .f} end"`, `[{"n": "Ann", "f": "12"}]`,
			[]string{`item 0: record off #Prof: follower_count: want integer, got a string (never served nor billed: fix`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := registry.LoadFiles(map[string][]byte{"services/x.cue": []byte(strings.Replace(checkBase, "NORMALIZE", tc.normalize, 1))})
			if err != nil {
				t.Fatal(err)
			}
			var checked []string
			for _, p := range Check(context.Background(), reg, fstest.MapFS{"examples/source_a/pro_net__profile.info.json": {Data: []byte(tc.items)}}) {
				checked = append(checked, p.At+": "+p.Msg)
			}
			payload := filepath.Join(t.TempDir(), "p.json")
			if err := os.WriteFile(payload, []byte(tc.items), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			tryErr := Try(&out, reg, "pro_net/profile.info", "", payload, "")
			var tried []string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(l, "services/x.cue:") && !strings.Contains(l, ": note: ") {
					tried = append(tried, l)
				}
			}
			slices.Sort(checked)
			slices.Sort(tried)
			if !slices.Equal(checked, tried) {
				t.Errorf("check and try disagree:\ncheck %q\ntry   %q", checked, tried)
			}
			if (tryErr != nil) != (len(checked) > 0) {
				t.Errorf("try error %v, check problems %q", tryErr, checked)
			}
			if len(tc.want) == 0 && len(checked) > 0 {
				t.Errorf("problems %q, want none", checked)
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.Join(checked, "\n"), w) {
					t.Errorf("problems %q lack %q", checked, w)
				}
			}
		})
	}
}

// TestRobustnessFindsAVanishingRecord: a field the program binds, given
// the wrong type (even one the example lacks: the bound path's own
// mutation reaches it), must not fail the program (a problem), and a
// record it makes vanish is noted (sdr check and sdr try print the note,
// neither fails); a guard that drops on purpose is neither.
func TestRobustnessFindsAVanishingRecord(t *testing.T) {
	for _, tc := range []struct{ name, normalize, want string }{
		{"as binding", `"if type != \"object\" or .n == null then empty else (.author | objects) as $a | {name: (.n | if type == \"string\" then . else null end), follower_count: ($a.c | toint)} end"`,
			`note: examples/source_a/pro_net__profile.info.json: offer pro_net/profile.info source_a/actor_1: robustness: item 0 with .author = null: the record vanished, dropped by (.author | objects) as $a (objects yields nothing)`},
		{"a bound field the example lacks", `"if type != \"object\" or .n == null then empty else (.author // {}) as $a | {name: .n, follower_count: ($a.c | toint)} end"`,
			`robustness: item 0 with .author = "x": normalize: `},
		{"guarded binding", `"if type != \"object\" or .n == null then empty else ((.author | objects) // {}) as $a | {name: (.n | if type == \"string\" then . else null end), follower_count: ($a.c | toint)} end"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := registry.LoadFiles(map[string][]byte{"services/x.cue": []byte(strings.Replace(checkBase, "NORMALIZE", tc.normalize, 1))})
			if err != nil {
				t.Fatal(err)
			}
			items := `[{"n": "Ann"}]`
			if strings.Contains(tc.want, "vanished") {
				items = `[{"n": "Ann", "author": {"c": 1}}]`
			}
			var all []string
			for _, p := range check(context.Background(), reg, fstest.MapFS{"examples/source_a/pro_net__profile.info.json": {Data: []byte(items)}}, true) {
				if p.Note != strings.Contains(p.Msg, "vanished") {
					t.Errorf("note %v: %s", p.Note, p)
				}
				all = append(all, p.String())
			}
			got := strings.Join(all, "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("problems:\n%s\nwant one with %q", got, tc.want)
			}
		})
	}
}
