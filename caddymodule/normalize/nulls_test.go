package normalize_test

import (
	"sync"
	"testing"

	"socialrouter/caddymodule/normalize"
)

// TestNormalizeGojqLeavesConstantsAlone: gojq shares the map of an object
// literal that reads no input among every run of a program; dropping a
// record's nulls must not change it, nor write it from concurrent calls
// (go test -race).
func TestNormalizeGojqLeavesConstantsAlone(t *testing.T) {
	p, err := normalize.CompileNormalizer(`if .id == null then {source: "p", id: null, kind: "stub"} else {source: "p", id} end`)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			rec, ok, err := p.NormalizeGojq(t.Context(), []byte(`{"x":1}`), "in", "now")
			if err != nil || !ok || string(rec) != `{"kind":"stub","source":"p"}` {
				t.Errorf("record %s %v %v", rec, ok, err)
			}
		})
	}
	wg.Wait()
	outs, err := p.Run(t.Context(), map[string]any{"x": 1}, "in", "now")
	if err != nil || len(outs) != 1 {
		t.Fatalf("run: %v %v", outs, err)
	}
	if m := outs[0].(map[string]any); len(m) != 3 {
		t.Errorf("the program's constant became %v", m)
	}
}

func TestWithoutNulls(t *testing.T) {
	m := map[string]any{"a": 1, "b": nil}
	got := normalize.WithoutNulls(m)
	if len(got) != 1 || got["a"] != 1 || len(m) != 2 {
		t.Errorf("WithoutNulls(%v) = %v", m, got)
	}
	same := map[string]any{"a": 1}
	if got := normalize.WithoutNulls(same); len(got) != 1 {
		t.Errorf("WithoutNulls(%v) = %v", same, got)
	}
}
