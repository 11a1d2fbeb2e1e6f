package router

import (
	"encoding/json"
	"strings"

	"socialrouter/caddymodule/registry"
	"socialrouter/internal/jsonscan"
)

// inputMatcher finds which input of a batch an upstream item answers, so
// records come back in input order and $input is the right one. Upstreams
// answer a batch in their own order; they echo the input in an `input`
// object (dataset_scrape) or carry it in a top-level field (url, query…).
type inputMatcher struct {
	n     int
	index map[string]int // matchKey(input) → first position in the batch
}

// newInputMatcher indexes a batch's inputs.
func newInputMatcher(inputs []string) *inputMatcher {
	m := &inputMatcher{n: len(inputs)}
	if len(inputs) > 1 {
		m.index = make(map[string]int, len(inputs))
		for i, in := range inputs {
			k := matchKey(in)
			if _, dup := m.index[k]; !dup {
				m.index[k] = i
			}
		}
	}
	return m
}

// matchKey is the form inputs and item fields are compared in: case and a
// trailing slash do not matter.
func matchKey(s string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "/"))
}

// match returns the position in the batch of the input item answers: the
// only input; else one equal to a string field of the item's `input` object,
// then to a top-level string field; else the first input. The raw item
// (valid JSON: the splitter checked the body) is scanned in place rather
// than decoded again.
func (m *inputMatcher) match(item json.RawMessage) int {
	if m.n <= 1 {
		return 0
	}
	doc := jsonscan.TrimSpace(jsonscan.Bytes(item))
	if doc == "" || doc[0] != '{' {
		return 0
	}
	if in, ok := jsonscan.Lookup(doc, "input"); ok && in[0] == '{' {
		if i := m.lookup(in); i >= 0 {
			return i
		}
	}
	return max(0, m.lookup(doc))
}

// lookup returns the position of the input equal to the first string
// member of object obj that is one, or -1.
func (m *inputMatcher) lookup(obj string) int {
	for i := 1; ; {
		_, v, next, ok := jsonscan.NextMember(obj, i)
		if !ok {
			return -1
		}
		if v[0] == '"' {
			if p, ok := m.index[matchKey(jsonscan.Text(v))]; ok {
				return p
			}
		}
		i = next
	}
}

// applyLimit flattens per-input records in input order, drops the skip
// records of earlier pages and applies the limit by scope: per_call keeps
// records [skip, skip+limit) overall, per_input the same range of each
// input. total is the count before skip and limit; more reports that a
// window was full, so a next page may exist. It is generic so that the
// offer of each record of a call served by two offers (Chunks, walk.go) is cut
// exactly as the records are.
func applyLimit[T any](perInput [][]T, limit, skip int, scope string) (records []T, total int, more bool) {
	for _, recs := range perInput {
		total += len(recs)
	}
	window := func(recs []T) []T {
		if limit > 0 && len(recs) >= skip+limit {
			more = true
		}
		if skip >= len(recs) {
			return nil
		}
		recs = recs[skip:]
		if limit > 0 && len(recs) > limit {
			recs = recs[:limit]
		}
		return recs
	}
	records = make([]T, 0, total)
	if scope == registry.ScopePerInput {
		for _, recs := range perInput {
			records = append(records, window(recs)...)
		}
		return records, total, more
	}
	for _, recs := range perInput {
		records = append(records, recs...)
	}
	return window(records), total, more
}
