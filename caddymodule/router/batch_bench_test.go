package router

import (
	"encoding/json"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"socialrouter/services"
)

// matchGjson is the gjson version of inputMatcher.match that the jsonscan
// one replaced, kept as its reference and benchmark baseline.
func (m *inputMatcher) matchGjson(item json.RawMessage) int {
	if m.n <= 1 {
		return 0
	}
	doc := gjson.ParseBytes(item)
	if !doc.IsObject() {
		return 0
	}
	found := -1
	lookup := func(_, v gjson.Result) bool {
		if v.Type != gjson.String {
			return true
		}
		if i, ok := m.index[matchKey(v.Str)]; ok {
			found = i
			return false
		}
		return true
	}
	if in := doc.Get("input"); in.IsObject() {
		in.ForEach(lookup)
	}
	if found < 0 {
		doc.ForEach(lookup)
	}
	return max(found, 0)
}

// exampleBatches returns, for every example answer of the services, its
// items and a batch of inputs made of the items' string fields (so that
// items match inputs other than the first).
func exampleBatches(tb testing.TB) (items []json.RawMessage, m *inputMatcher) {
	var inputs []string
	err := fs.WalkDir(services.FS, "examples", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".json" {
			return err
		}
		b, err := fs.ReadFile(services.FS, p)
		if err != nil {
			return err
		}
		gjson.ParseBytes(b).ForEach(func(_, v gjson.Result) bool {
			items = append(items, json.RawMessage(v.Raw))
			if u := v.Get("url"); u.Type == gjson.String {
				inputs = append(inputs, u.Str)
			}
			if u := v.Get("input.url"); u.Type == gjson.String {
				inputs = append(inputs, u.Str)
			}
			return true
		})
		return nil
	})
	if err != nil || len(items) == 0 {
		tb.Fatalf("example items: %d, %v", len(items), err)
	}
	inputs = append([]string{"https://nowhere.example/"}, inputs...)
	return items, newInputMatcher(inputs)
}

func TestMatchAgreesWithGjson(t *testing.T) {
	items, m := exampleBatches(t)
	items = append(items, json.RawMessage(`{"input":{"url":"HTTPS://X.example/a/"},"url":"https://y.example"}`),
		json.RawMessage(`{"input":{"n":1,"u":"https://y.example"}}`), json.RawMessage(`["https://y.example"]`),
		json.RawMessage(`{"url":"https:\/\/y.example"}`), json.RawMessage(`"https://y.example"`))
	m.index[matchKey("https://x.example/a")] = 1
	m.index[matchKey("https://y.example")] = 2
	matched := 0
	for i, it := range items {
		got, want := m.match(it), m.matchGjson(it)
		if got != want {
			t.Fatalf("item %d: match = %d, gjson %d: %s", i, got, want, it)
		}
		if got > 0 {
			matched++
		}
	}
	if matched == 0 {
		t.Fatal("no item matched an input but the first: the comparison proves nothing")
	}
	t.Logf("%d items, %d matched past the first input", len(items), matched)
}

// BenchmarkMatch finds the input of every example item: the jsonscan
// match against the gjson one it replaced.
//
//	go test -run '^$' -bench BenchmarkMatch -benchmem ./caddymodule/router/
func BenchmarkMatch(b *testing.B) {
	items, m := exampleBatches(b)
	b.Run("jsonscan", func(b *testing.B) {
		for b.Loop() {
			for _, it := range items {
				m.match(it)
			}
		}
	})
	b.Run("gjson", func(b *testing.B) {
		for b.Loop() {
			for _, it := range items {
				m.matchGjson(it)
			}
		}
	})
}
