// Package jsonmutate makes the type mutations of an upstream item that
// the robustness checks run through a normalizer: every nested value
// replaced, one at a time, by a value of each JSON type. It is shared by
// `sdr check` (and the reload that runs the same check) and the registry's
// tests, so both hold the normalizers to the same mutations.
package jsonmutate

import (
	"fmt"
	"maps"
	"slices"
)

// OddValues are the replacements tried: one of each JSON type.
var OddValues = []any{nil, "x", 7.5, map[string]any{"x": 1}, []any{"a", nil}, true}

// Paths calls f with a copy of v (a decoded JSON value) in which the value
// at one nested path (object members and the first two elements of arrays,
// at any depth) is replaced by repl, for every such path, in a stable
// order. path reads like ".a.b[0]".
func Paths(v any, repl any, f func(path string, mutated any)) {
	var walk func(cur any, path string, set func(any) any)
	walk = func(cur any, path string, set func(any) any) {
		switch x := cur.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				child := x[k]
				rebuild := func(nv any) any {
					m := make(map[string]any, len(x))
					for kk, vv := range x {
						m[kk] = vv
					}
					m[k] = nv
					return set(m)
				}
				f(path+"."+k, rebuild(repl))
				walk(child, path+"."+k, rebuild)
			}
		case []any:
			for i := 0; i < len(x) && i < 2; i++ {
				rebuild := func(nv any) any {
					a := append([]any(nil), x...)
					a[i] = nv
					return set(a)
				}
				f(fmt.Sprintf("%s[%d]", path, i), rebuild(repl))
				walk(x[i], fmt.Sprintf("%s[%d]", path, i), rebuild)
			}
		}
	}
	walk(v, "", func(nv any) any { return nv })
}
