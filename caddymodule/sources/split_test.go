package sources

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"socialrouter/internal/jsonscan"
	"socialrouter/services"
)

func TestSplitItems(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		items     []string
		errorRecs int
		wantErr   bool
		unchecked bool // the items do not pass jsonscan's strict check: the normalizer checks each
	}{
		{"empty array", `[]`, nil, 0, false, false},
		{"data", ` [ {"a":1} , {"b":[1,2,{"error":"nested does not count"}]} ] `, []string{`{"a":1}`, `{"b":[1,2,{"error":"nested does not count"}]}`}, 0, false, false},
		{"error records", `[{"a":1},{"input":{"url":"u"},"error":"dead","error_code":"dead_page"},{"warning":"w","warning_code":"dead_page"},{"error":null},{"error_code":"x"}]`,
			[]string{`{"a":1}`, `{"input":{"url":"u"},"error":"dead","error_code":"dead_page"}`, `{"warning":"w","warning_code":"dead_page"}`, `{"error":null}`, `{"error_code":"x"}`}, 3, false, false},
		{"non-object items", `[1,"s",null]`, []string{`1`, `"s"`, `null`}, 0, false, false},
		{"scalars and spacing", "[ -1.5e3 ,\ttrue,false , \"a\\\"]\" ,[] ,{}\n]", []string{`-1.5e3`, `true`, `false`, `"a\"]"`, `[]`, `{}`}, 0, false, false},
		{"error words that are not top-level keys", `[{"msg":"error","x":{"error":1},"l":["error_code",{"warning_code":2}]},{"error":{"nested":null}}]`,
			[]string{`{"msg":"error","x":{"error":1},"l":["error_code",{"warning_code":2}]}`, `{"error":{"nested":null}}`}, 1, false, false},
		{"escaped keys and strings", `[{"\u0065rror_code":"x"},{"k\"":"error","error" : null},{"s":"\\","warning_code"  :  "w"}]`,
			[]string{`{"\u0065rror_code":"x"}`, `{"k\"":"error","error" : null}`, `{"s":"\\","warning_code"  :  "w"}`}, 2, false, false},
		{"truncated", `[{"a":1},{"b"`, nil, 0, true, false},
		{"object", `{"items":[]}`, nil, 0, true, false},
		{"empty", ``, nil, 0, true, false},
		{"two values", `[] []`, nil, 0, true, false},
		{"duplicated key", `[{"a":1},{"b":1,"b":2,"error":"x"}]`, []string{`{"a":1}`, `{"b":1,"b":2,"error":"x"}`}, 1, false, true},
		{"number beyond float64", `[{"n":1e400}]`, []string{`{"n":1e400}`}, 0, false, true},
		{"invalid UTF-8", "[\"\xff\",{\"error_code\":1}]", []string{"\"\xff\"", `{"error_code":1}`}, 1, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			items, n, _, checked, err := splitItems(body)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if checked == tc.unchecked {
				t.Errorf("checked = %v, want %v", checked, !tc.unchecked)
			}
			if len(items) != len(tc.items) || n != tc.errorRecs {
				t.Fatalf("got %d items, %d errors; want %d, %d", len(items), n, len(tc.items), tc.errorRecs)
			}
			for i := range items {
				if string(items[i]) != tc.items[i] {
					t.Errorf("item %d = %s, want %s", i, items[i], tc.items[i])
				}
			}
			// Items share the body but are capacity-capped: appending to one
			// never writes over the next.
			for i := range items {
				_ = append(items[i], "XXXXXXXX"...)
			}
			for i := range items {
				if string(items[i]) != tc.items[i] {
					t.Errorf("item %d overwritten by an append to its neighbour: %s", i, items[i])
				}
			}
		})
	}
}

// splitItemsRef is the straightforward gjson version of splitItems, kept
// as the reference the one-pass scanner must agree with.
func splitItemsRef(body []byte) ([]string, int, bool) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsArray() {
		return nil, 0, false
	}
	var items []string
	errs := 0
	gjson.ParseBytes(body).ForEach(func(_, v gjson.Result) bool {
		items = append(items, v.Raw)
		isErr := false
		if v.IsObject() {
			v.ForEach(func(k, val gjson.Result) bool {
				switch k.String() {
				case "error", "error_code", "warning_code":
					if val.Type != gjson.Null {
						isErr = true
					}
				}
				return true
			})
		}
		if isErr {
			errs++
		}
		return true
	})
	return items, errs, true
}

// FuzzSplitItems checks splitItems against splitItemsRef on any input: the
// same items, the same error count, the same verdict on invalid bodies.
func FuzzSplitItems(f *testing.F) {
	for _, s := range []string{`[]`, `[{"a":1},{"error":"x"}]`, `[1,"s",null,true]`, `{"a":[]}`, `[{"\u0065rror":1}]`,
		`[{"error":null,"warning_code":"w"}]`, ` [ [ {"error":1} ] , {"b":{"error_code":2}} ] `, `[{"a":"]},{"}]`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want, wantErrs, ok := splitItemsRef(body)
		got, gotErrs, _, checked, err := splitItems(bytes.Clone(body))
		if (err == nil) != ok {
			t.Fatalf("splitItems(%q) err = %v, reference ok = %v", body, err, ok)
		}
		if !ok {
			return
		}
		var c jsonscan.Checker
		for i := range got {
			if checked && !c.Valid(string(got[i])) {
				t.Fatalf("splitItems(%q) says checked, but item %d does not pass jsonscan's strict check", body, i)
			}
		}
		if len(got) != len(want) || gotErrs != wantErrs {
			t.Fatalf("splitItems(%q) = %d items, %d errors; reference %d, %d", body, len(got), gotErrs, len(want), wantErrs)
		}
		for i := range got {
			if string(got[i]) != want[i] {
				t.Fatalf("splitItems(%q) item %d = %q, reference %q", body, i, got[i], want[i])
			}
		}
	})
}

// BenchmarkSplitItems splits the simulator's pro_net profile fixture (the
// body of make bench's end-to-end load), against gjson's validation alone.
func BenchmarkSplitItems(b *testing.B) {
	body, err := fs.ReadFile(services.FS, "examples/source_b/pro_net__profile.info.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("split", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, _, _, _, err := splitItems(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate-only", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			gjson.ValidBytes(body)
		}
	})
}

// TestSplitIndexesMembers: a checked body's object items come with their
// members located as the check found them (offsets from the item's
// brace); an item that is not an object, or has a key written with an
// escape, has none; a body that fails the strict check has no index.
func TestSplitIndexesMembers(t *testing.T) {
	tests := []struct {
		name string
		body string
		want [][]string // per item: key, value, key, value…; nil: no index
	}{
		{"objects", `[{"a":1,"b":"x"} , {"c":[1,{"d":2}],"e":{"f":null}},{}]`,
			[][]string{{"a", "1", "b", `"x"`}, {"c", `[1,{"d":2}]`, "e", `{"f":null}`}, {}}},
		{"not objects, an escaped key", `[1,"s",{"\u0061":1},[{"a":1}],{"ok":true}]`,
			[][]string{nil, nil, nil, nil, {"ok", "true"}}},
		{"a duplicated key fails the strict check", `[{"a":1,"a":2}]`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			index := new([]jsonscan.Member)
			sp, ok := splitChecked([]byte(tc.body), index)
			if tc.want == nil {
				if ok {
					t.Fatalf("checked a body the strict check refuses: %+v", sp)
				}
				return
			}
			if !ok || len(sp.members) != len(sp.items) || len(sp.items) != len(tc.want) {
				t.Fatalf("ok %v, %d items, %d indexes; want %d", ok, len(sp.items), len(sp.members), len(tc.want))
			}
			for k, ms := range sp.members {
				if (ms == nil) != (tc.want[k] == nil) {
					t.Fatalf("item %d: index %v, want %q", k, ms, tc.want[k])
				}
				var got []string
				for _, m := range ms {
					item := sp.items[k]
					got = append(got, string(item[m.KeyStart:m.KeyEnd]), string(item[m.ValueStart:m.ValueEnd]))
				}
				if len(got) != len(tc.want[k]) || strings.Join(got, "|") != strings.Join(tc.want[k], "|") {
					t.Errorf("item %d: members %q, want %q", k, got, tc.want[k])
				}
			}
		})
	}
}
