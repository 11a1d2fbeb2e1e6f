package router

import (
	"reflect"
	"testing"
)

// TestSplit: inputs are cut into batches of at most size, in order; no
// input still makes one (empty) batch, so the upstream is called once.
func TestSplit(t *testing.T) {
	tests := []struct {
		inputs []string
		size   int
		want   [][]string
	}{
		{nil, 3, [][]string{nil}},
		{[]string{"a"}, 3, [][]string{{"a"}}},
		{[]string{"a", "b", "c"}, 3, [][]string{{"a", "b", "c"}}},
		{[]string{"a", "b", "c", "d"}, 3, [][]string{{"a", "b", "c"}, {"d"}}},
		{[]string{"a", "b", "c", "d"}, 1, [][]string{{"a"}, {"b"}, {"c"}, {"d"}}},
		{[]string{"a", "b"}, 0, [][]string{{"a", "b"}}},
	}
	for _, tt := range tests {
		got := split(tt.inputs, tt.size)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("split(%v, %d) = %v, want %v", tt.inputs, tt.size, got, tt.want)
		}
		if len(got) > 1 && cap(got[0]) != len(got[0]) {
			t.Errorf("split(%v, %d): a batch can grow into the next (cap %d)", tt.inputs, tt.size, cap(got[0]))
		}
	}
	for _, tt := range []struct{ a, b, want string }{{"", "", ""}, {"x", "", "x"}, {"", "y", "y"}, {"x", "y", "x; y"}} {
		if got := joinMsg(tt.a, tt.b); got != tt.want {
			t.Errorf("joinMsg(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}
