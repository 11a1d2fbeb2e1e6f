package jsontree

import (
	"reflect"
	"testing"
)

func TestCopy(t *testing.T) {
	in := map[string]any{"a": []any{map[string]any{"b": 1.0, "drop": true}}, "s": "x"}
	var seen int
	out := Copy(in, func(o map[string]any) {
		seen++
		delete(o, "drop")
	}).(map[string]any)
	want := map[string]any{"a": []any{map[string]any{"b": 1.0}}, "s": "x"}
	if !reflect.DeepEqual(out, want) || seen != 2 {
		t.Fatalf("Copy = %v after %d fixes, want %v after 2", out, seen, want)
	}
	out["a"].([]any)[0].(map[string]any)["b"] = 2.0
	if in["a"].([]any)[0].(map[string]any)["b"] != 1.0 {
		t.Error("the copy shares an object with the original")
	}
	if _, ok := in["a"].([]any)[0].(map[string]any)["drop"]; !ok {
		t.Error("fix changed the original")
	}
	if got := Copy(in, nil); !reflect.DeepEqual(got, in) {
		t.Errorf("Copy without fix = %v, want %v", got, in)
	}
}
