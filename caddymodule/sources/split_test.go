package sources

import (
	"bytes"
	"io/fs"
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
