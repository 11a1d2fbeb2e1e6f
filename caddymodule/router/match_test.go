package router

import (
	"encoding/json"
	"fmt"
	"testing"

	"socialrouter/caddymodule/registry"
)

func TestApplyLimitPages(t *testing.T) {
	recs := func(prefix string, n int) []json.RawMessage {
		var out []json.RawMessage
		for i := range n {
			out = append(out, json.RawMessage(fmt.Sprintf(`"%s%d"`, prefix, i)))
		}
		return out
	}
	tests := []struct {
		name        string
		perInput    [][]json.RawMessage
		limit, skip int
		scope       string
		want        string
		total       int
		more        bool
	}{
		{"per call first page", [][]json.RawMessage{recs("a", 3), recs("b", 3)}, 4, 0, registry.ScopePerCall, `["a0","a1","a2","b0"]`, 6, true},
		{"per call second page", [][]json.RawMessage{recs("a", 3), recs("b", 3)}, 4, 4, registry.ScopePerCall, `["b1","b2"]`, 6, false},
		{"per input first page", [][]json.RawMessage{recs("a", 3), recs("b", 1)}, 2, 0, registry.ScopePerInput, `["a0","a1","b0"]`, 4, true},
		{"per input second page", [][]json.RawMessage{recs("a", 4), recs("b", 1)}, 2, 2, registry.ScopePerInput, `["a2","a3"]`, 5, true},
		{"per input past the end", [][]json.RawMessage{recs("a", 1)}, 2, 2, registry.ScopePerInput, `[]`, 1, false},
		{"no limit", [][]json.RawMessage{recs("a", 2)}, 0, 0, registry.ScopePerCall, `["a0","a1"]`, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total, more := applyLimit(tt.perInput, tt.limit, tt.skip, tt.scope)
			b, _ := json.Marshal(got)
			if string(b) != tt.want || total != tt.total || more != tt.more {
				t.Errorf("got %s total %d more %v, want %s %d %v", b, total, more, tt.want, tt.total, tt.more)
			}
		})
	}
}
