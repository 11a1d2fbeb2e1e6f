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
	"strings"
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

// PathsWith is Paths, and also, for each of extra (object paths such as
// ".author" or ".a.b", the fields a normalizer binds) that v does not
// hold, a copy of v with that field set to repl when repl is null, a
// string or a number: the wrong types an upstream sends for an object or
// array the example happens to lack.
func PathsWith(v any, repl any, extra []string, f func(path string, mutated any)) {
	Paths(v, repl, f)
	switch repl.(type) {
	case nil, string, float64:
	default:
		return
	}
	for _, p := range extra {
		keys := strings.Split(strings.TrimPrefix(p, "."), ".")
		if m, ok := setMissing(v, keys, repl); ok {
			f(p, m)
		}
	}
}

// setMissing is a copy of v with the object path keys set to repl, ok
// false when v already holds it or a step is not an object.
func setMissing(v any, keys []string, repl any) (any, bool) {
	obj, isObj := v.(map[string]any)
	if !isObj {
		if v != nil {
			return nil, false
		}
		obj = map[string]any{}
	}
	child, has := obj[keys[0]]
	var nv any
	if len(keys) == 1 {
		if has {
			return nil, false
		}
		nv = repl
	} else {
		var ok bool
		if nv, ok = setMissing(child, keys[1:], repl); !ok {
			return nil, false
		}
	}
	m := make(map[string]any, len(obj)+1)
	for k, x := range obj {
		m[k] = x
	}
	m[keys[0]] = nv
	return m, true
}
