package router

import (
	"encoding/json"
	"reflect"
	"testing"

	"socialrouter/caddymodule/normalize"
	"socialrouter/caddymodule/registry"
)

// TestSplit: inputs are cut into batches of at most size, in order; no
// input still makes one (empty) batch, so the upstream is called once.
func TestSplit(t *testing.T) {
	tests := []struct {
		inputs []string
		size   int
		want   [][]string
	}{
		{nil, 3, [][]string{nil}},
		{[]string{"a"}, 3, [][]string{{"a"}}},
		{[]string{"a", "b", "c"}, 3, [][]string{{"a", "b", "c"}}},
		{[]string{"a", "b", "c", "d"}, 3, [][]string{{"a", "b", "c"}, {"d"}}},
		{[]string{"a", "b", "c", "d"}, 1, [][]string{{"a"}, {"b"}, {"c"}, {"d"}}},
		{[]string{"a", "b"}, 0, [][]string{{"a", "b"}}},
	}
	for _, tt := range tests {
		got := split(tt.inputs, tt.size)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("split(%v, %d) = %v, want %v", tt.inputs, tt.size, got, tt.want)
		}
		if len(got) > 1 && cap(got[0]) != len(got[0]) {
			t.Errorf("split(%v, %d): a batch can grow into the next (cap %d)", tt.inputs, tt.size, cap(got[0]))
		}
	}
	for _, tt := range []struct{ a, b, want string }{{"", "", ""}, {"x", "", "x"}, {"", "y", "y"}, {"x", "y", "x; y"}} {
		if got := joinMsg(tt.a, tt.b); got != tt.want {
			t.Errorf("joinMsg(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestBuildBodyDropsTopLevelNulls: a request program's top-level nulls
// (an option the caller left out) are not sent; nested ones are the
// program's to keep.
func TestBuildBodyDropsTopLevelNulls(t *testing.T) {
	for _, tc := range []struct {
		name, program string
		opts          map[string]any
		want          string
	}{
		{"option left out", `{profileUrls: .inputs, includeEmail: .options.includeEmail}`, nil, `{"profileUrls":["u"]}`},
		{"option given", `{profileUrls: .inputs, includeEmail: .options.includeEmail}`, map[string]any{"includeEmail": false}, `{"includeEmail":false,"profileUrls":["u"]}`},
		{"nested null kept", `{input: [{url: .inputs[0], sort: .options.sort}]}`, nil, `{"input":[{"sort":null,"url":"u"}]}`},
		{"not an object", `[.inputs[] | {url: .}]`, nil, `[{"url":"u"}]`},
		{"constant object", `{fixed: true, unused: null}`, nil, `{"fixed":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := normalize.Compile(tc.program)
			if err != nil {
				t.Fatal(err)
			}
			body, err := buildBody(t.Context(), &registry.Offer{ID: "o", Request: p}, []string{"u"}, tc.opts, 1, "now")
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(body); string(got) != tc.want {
				t.Errorf("body %s, want %s", got, tc.want)
			}
			// The program's own output is left as it was: gojq shares the
			// map of a constant object among runs.
			again, _ := p.Run(t.Context(), map[string]any{"inputs": []any{"u"}, "options": tc.opts, "limit": 1}, "", "now")
			if got, _ := json.Marshal(again[0]); tc.name == "constant object" && string(got) != `{"fixed":true,"unused":null}` {
				t.Errorf("the program's constant became %s", got)
			}
		})
	}
}
