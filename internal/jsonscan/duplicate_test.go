package jsonscan

import "testing"

func TestFind(t *testing.T) {
	tests := []struct {
		in  string
		key string
		dup bool
	}{
		{`{"url":"nope","url":"https://x"}`, "url", true},
		{`{"urls":["a"],"limit":1}`, "", false},
		{`{"options":{"sort":"new","sort":"top"}}`, "sort", true},
		{`{"a":{"x":1},"b":{"x":1}}`, "", false},
		{`{"a":[{"x":1,"y":2},{"x":1}],"b":2}`, "", false},
		{`{"a":[{"x":1,"x":2}]}`, "x", true},
		{`{"a":{"b":{}},"a":1}`, "a", true},
		{`[{"k":1},{"k":2}]`, "", false},
		{`{"a":1,`, "", false},
		{`"str"`, "", false},
		{` {"url":1, "\u0075rl":2} `, "url", true},
		{`{ "a" : [ ] , "b" : { } , "c" : [ { } ] }`, "", false},
		{`{"a":"{\"x\":1,\"x\":2}"}`, "", false},
	}
	for _, tt := range tests {
		k, dup := FindDuplicate([]byte(tt.in))
		if k != tt.key || dup != tt.dup {
			t.Errorf("FindDuplicate(%s) = %q, %v; want %q, %v", tt.in, k, dup, tt.key, tt.dup)
		}
	}
}
