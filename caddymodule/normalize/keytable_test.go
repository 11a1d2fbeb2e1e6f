package normalize

import (
	"fmt"
	"testing"
)

// TestKeyTable: every key of a site is found at its slot and no other
// string is, including keys whose hashes collide (same length and bytes
// at the three places hashed) and the empty key.
func TestKeyTable(t *testing.T) {
	tests := []struct {
		keys   []string
		absent []string
	}{
		{nil, []string{"", "a"}},
		{[]string{"a"}, []string{"", "b", "aa"}},
		{[]string{"", "name", "id"}, []string{"nam", "names", "Name"}},
		{[]string{"aqxb", "arxb", "asxb", "atxb"}, []string{"auxb", "axb", "aqxbb"}}, // one hash for all four and the first absent
		{[]string{"current_company", "current_company_name", "current_company_company_id", "url", "input_url"}, []string{"current_compan", "urls"}},
	}
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("key_%d", i))
	}
	tests = append(tests, struct{ keys, absent []string }{many, []string{"key_100", "key_", "key_-1"}})
	for _, tt := range tests {
		m := map[string]int{}
		for i, k := range tt.keys {
			m[k] = i
		}
		tab := newKeyTable(m)
		for k, want := range m {
			if got, ok := tab.find(k); !ok || got != want {
				t.Errorf("keys %q: find(%q) = %d, %v; want %d", tt.keys, k, got, ok, want)
			}
		}
		for _, k := range tt.absent {
			if got, ok := tab.find(k); ok {
				t.Errorf("keys %q: find(%q) = %d, want absent", tt.keys, k, got)
			}
		}
	}
}
