// Package jsontree copies and writes trees of decoded JSON values
// (map[string]any, []any and scalars), the form in which the registry
// builds the OpenAPI document and the MCP endpoint its tool schemas, and
// in which a request program builds an upstream request's body.
package jsontree

import (
	"math"
	"slices"
	"strconv"

	"socialrouter/internal/jsonstr"
)

// Copy returns a deep copy of v. Unless fix is nil, it is called on every
// copied object once its members are copied (innermost first), and may
// change it: drop members, rewrite them.
func Copy(v any, fix func(map[string]any)) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = Copy(x, fix)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = Copy(x, fix)
		}
		if fix != nil {
			fix(out)
		}
		return out
	}
	return v
}

// Append appends v as json.Marshal writes it (keys sorted, strings
// HTML-escaped), without reflection: a tree of map[string]any, []any,
// string, float64, int, bool and nil, as gojq and encoding/json make
// them. It returns false, and b as it was, for anything else (and for a
// NaN or an infinity, which json.Marshal refuses): the caller then uses
// json.Marshal. Its frames are small, where json.Marshal's reflection
// takes about 2 KiB of stack for a body two objects deep: an upstream
// request is encoded on a held call's goroutine, whose stack must stay
// 16 KiB (docs/perf-log.md, issue 38's in-flight round).
func Append(b []byte, v any) ([]byte, bool) {
	n := len(b)
	b, ok := appendValue(b, v)
	if !ok {
		return b[:n], false
	}
	return b, true
}

func appendValue(b []byte, v any) ([]byte, bool) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, t), true
	case string:
		return jsonstr.Append(b, t, true), true
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return b, false
		}
		return AppendFloat(b, t), true
	case int:
		return strconv.AppendInt(b, int64(t), 10), true
	case []any:
		if t == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendValue(b, x); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		if t == nil {
			return append(b, "null"...), true
		}
		return appendObject(b, t)
	}
	return b, false
}

func appendObject(b []byte, m map[string]any) ([]byte, bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, k, true)
		b = append(b, ':')
		var ok bool
		if b, ok = appendValue(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// AppendFloat formats f as encoding/json (and gojq's encoder) do.
func AppendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if x := math.Abs(f); x != 0 && (x < 1e-6 || x >= 1e21) {
		format = 'e'
	}
	n0 := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n-n0 >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
