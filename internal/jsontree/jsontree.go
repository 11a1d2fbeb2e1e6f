// Package jsontree copies trees of decoded JSON values (map[string]any,
// []any and scalars), the form in which the registry builds the OpenAPI
// document and the MCP endpoint its tool schemas.
package jsontree

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
