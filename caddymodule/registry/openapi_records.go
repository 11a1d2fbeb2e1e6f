package registry

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"socialrouter/internal/jsontree"
)

// record adds the record definition's schema to the components (once) and
// returns its component name.
//
// The schema generated from CUE keeps its helper definitions under $defs
// with refs "#/$defs/X", which would resolve against the document root once
// embedded: they are hoisted into components.schemas and the refs rewritten.
// An embedded definition (CUE `#Rec: {#Common, extra?: string}`) comes out as
// a $ref beside sibling properties; since the referenced definition is
// closed on its own, JSON Schema would refuse the sibling fields, so such
// a $ref is merged into its siblings, as CUE unifies the embedding.
func (b *openapiBuilder) record(def string) (string, error) {
	if name, ok := b.recordRefs[def]; ok {
		return name, nil
	}
	raw, ok := b.r.views.records[def]
	if !ok || raw == nil {
		return "", fmt.Errorf("record definition %s has no schema", def)
	}
	root := deepCopy(raw).(obj)
	defs, _ := root["$defs"].(obj)
	delete(root, "$defs")

	n := &defNormalizer{defs: defs, done: map[string]any{}, busy: map[string]bool{}}
	rootN, err := n.normalize(root)
	if err != nil {
		return "", fmt.Errorf("record %s: %v", def, err)
	}
	// Definitions still referenced after merging, transitively.
	used := map[string]bool{}
	var walkErr error
	var collect func(v any)
	collect = func(v any) {
		forEachRef(v, func(target string) {
			if used[target] || walkErr != nil {
				return
			}
			used[target] = true
			d, err := n.def(target)
			if err != nil {
				walkErr = err
				return
			}
			collect(d)
		})
	}
	collect(rootN)
	if walkErr != nil {
		return "", fmt.Errorf("record %s: %v", def, walkErr)
	}

	// Hoist each definition under its own name when that is free or holds
	// the same schema (definitions shared by several records are hoisted
	// once); otherwise under the first free name X2, X3, ….
	names := sortedKeys(used)
	mapping := map[string]string{}
	for _, d := range names {
		mapping[d] = d
	}
	base := strings.TrimPrefix(def, "#")
	var hoisted map[string]any
	for {
		hoisted = map[string]any{}
		for _, d := range names {
			dv, _ := n.def(d)
			hoisted[d] = rewriteRefs(deepCopy(dv), mapping)
		}
		taken := map[string]bool{base: true}
		changed := false
		for _, d := range names {
			name := mapping[d]
			prev, exists := b.schemas[name]
			if !taken[name] && (!exists || sameSchema(prev, hoisted[d])) {
				taken[name] = true
				continue
			}
			for i := 2; ; i++ {
				cand := fmt.Sprintf("%s%d", d, i)
				prev, exists := b.schemas[cand]
				if !taken[cand] && (!exists || sameSchema(prev, hoisted[d])) && cand != name {
					mapping[d] = cand
					break
				}
			}
			changed = true
			break
		}
		if !changed {
			break
		}
	}
	for _, d := range names {
		if _, exists := b.schemas[mapping[d]]; !exists {
			b.schemas[mapping[d]] = hoisted[d]
		}
	}
	recSchema := rewriteRefs(rootN, mapping)
	recName := base
	for i := 2; ; i++ {
		prev, exists := b.schemas[recName]
		if !exists || sameSchema(prev, recSchema) {
			break
		}
		recName = fmt.Sprintf("%sRecord%d", base, i)
	}
	if _, exists := b.schemas[recName]; !exists {
		b.schemas[recName] = recSchema
	}
	b.recordRefs[def] = recName
	return recName, nil
}

// sameSchema reports whether two schemas validate the same instances, as
// far as it matters for sharing one component: annotations aside, and an
// enum of strings with or without its type.
func sameSchema(a, b any) bool {
	return reflect.DeepEqual(canonicalSchema(a), canonicalSchema(b))
}

func canonicalSchema(v any) any {
	return jsontree.Copy(v, func(o obj) {
		for _, k := range []string{"description", "title", "examples", "example"} {
			delete(o, k)
		}
		if enum, ok := o["enum"].([]any); ok && o["type"] == "string" {
			allStrings := true
			for _, e := range enum {
				if _, ok := e.(string); !ok {
					allStrings = false
				}
			}
			if allStrings {
				delete(o, "type")
			}
		}
	})
}

// defNormalizer merges embedding refs of one generated record schema.
type defNormalizer struct {
	defs obj
	done map[string]any
	busy map[string]bool
}

// def returns the normalized definition named name.
func (n *defNormalizer) def(name string) (any, error) {
	if d, ok := n.done[name]; ok {
		return d, nil
	}
	raw, ok := n.defs[name]
	if !ok {
		return nil, fmt.Errorf("$ref to undefined definition %q", name)
	}
	if n.busy[name] {
		return nil, fmt.Errorf("definition %q embeds itself", name)
	}
	n.busy[name] = true
	d, err := n.normalize(deepCopy(raw))
	delete(n.busy, name)
	if err != nil {
		return nil, err
	}
	n.done[name] = d
	return d, nil
}

// embedKeys are the sibling keys that make a $ref an embedding.
var embedKeys = []string{"properties", "patternProperties", "additionalProperties", "required"}

func (n *defNormalizer) normalize(v any) (any, error) {
	switch t := v.(type) {
	case []any:
		for i := range t {
			x, err := n.normalize(t[i])
			if err != nil {
				return nil, err
			}
			t[i] = x
		}
		return t, nil
	case obj:
		for k, x := range t {
			y, err := n.normalize(x)
			if err != nil {
				return nil, err
			}
			t[k] = y
		}
		r, isStr := t["$ref"].(string)
		if !isStr {
			return t, nil
		}
		target, ok := strings.CutPrefix(r, "#/$defs/")
		if !ok {
			return nil, fmt.Errorf("unsupported $ref %q", r)
		}
		embedded := false
		for _, k := range embedKeys {
			if _, has := t[k]; has {
				embedded = true
			}
		}
		if !embedded {
			return t, nil
		}
		d, err := n.def(target)
		if err != nil {
			return nil, err
		}
		base, isObj := d.(obj)
		if !isObj || !mergeable(base) {
			return t, nil
		}
		delete(t, "$ref")
		return mergeEmbedding(deepCopy(base).(obj), t), nil
	}
	return v, nil
}

// mergeable reports whether an object schema can be merged into an
// embedding: it must be a plain object schema.
func mergeable(s obj) bool {
	for k := range s {
		switch k {
		case "type", "properties", "patternProperties", "additionalProperties", "required", "description", "title":
		default:
			return false
		}
	}
	return s["type"] == nil || s["type"] == "object"
}

// mergeEmbedding unifies an embedded object schema into the embedding one:
// properties of both (a property declared by both must satisfy both), the
// union of required, and the embedding's closedness.
func mergeEmbedding(base, outer obj) obj {
	out := obj{}
	for k, v := range base {
		out[k] = v
	}
	// The embedded definition's comment describes it, not the record
	// that embeds it: a record is described by its own comment or not at
	// all.
	delete(out, "description")
	delete(out, "title")
	for _, k := range []string{"properties", "patternProperties"} {
		bp, _ := base[k].(obj)
		op, _ := outer[k].(obj)
		if bp == nil && op == nil {
			continue
		}
		m := obj{}
		for name, s := range bp {
			m[name] = s
		}
		for name, s := range op {
			if prev, ok := m[name]; ok && !reflect.DeepEqual(prev, s) {
				m[name] = obj{"allOf": []any{prev, s}}
			} else {
				m[name] = s
			}
		}
		out[k] = m
	}
	if br, or := base["required"], outer["required"]; br != nil || or != nil {
		set := map[string]bool{}
		for _, l := range []any{br, or} {
			list, _ := l.([]any)
			for _, x := range list {
				if s, ok := x.(string); ok {
					set[s] = true
				}
			}
		}
		out["required"] = anySlice(sortedKeys(set))
	}
	for k, v := range outer {
		switch k {
		case "properties", "patternProperties", "required":
		default:
			out[k] = v
		}
	}
	if _, ok := outer["additionalProperties"]; !ok {
		// The embedding is open unless it says otherwise.
		delete(out, "additionalProperties")
	}
	return out
}

// forEachRef calls fn with the target of every "#/$defs/X" ref under v.
func forEachRef(v any, fn func(string)) {
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			forEachRef(x, fn)
		}
	case obj:
		if r, ok := t["$ref"].(string); ok {
			if target, ok := strings.CutPrefix(r, "#/$defs/"); ok {
				fn(target)
			}
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			forEachRef(t[k], fn)
		}
	}
}

// rewriteRefs points "#/$defs/X" refs at the hoisted component names.
func rewriteRefs(v any, names map[string]string) any {
	switch t := v.(type) {
	case []any:
		for i := range t {
			t[i] = rewriteRefs(t[i], names)
		}
	case obj:
		for k, x := range t {
			t[k] = rewriteRefs(x, names)
		}
		if r, ok := t["$ref"].(string); ok {
			if target, ok := strings.CutPrefix(r, "#/$defs/"); ok {
				t["$ref"] = schemaPrefix + names[target]
			}
		}
	}
	return v
}

func deepCopy(v any) any { return jsontree.Copy(v, nil) }
