package jsonscan

import (
	"strings"
	"testing"
)

// TestMemberAt: the members Checker.Object reports are located in the
// object's text, key bodies and values as they are there; an escaped or
// empty key (not a view of the text) is not.
func TestMemberAt(t *testing.T) {
	type want struct {
		key, value string
		ok         bool
	}
	tests := []struct {
		name string
		obj  string
		want []want
	}{
		{"plain", `{"a":1, "bc" : "x\"y" ,"d":[1,{"e":2}]}`,
			[]want{{"a", "1", true}, {"bc", `"x\"y"`, true}, {"d", `[1,{"e":2}]`, true}}},
		{"escaped key", `{"a\u0062":true,"c":null}`, []want{{"", "", false}, {"c", "null", true}}},
		{"empty key", `{"":{}}`, []want{{"", "", false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The object inside a longer text, as the splitter reads an
			// item of a body: offsets count from the object's brace.
			text := `[0,` + tc.obj + `]`
			at := strings.Index(text, "{")
			var got []want
			var c Checker
			end := c.Object(text, at, func(k, v string) {
				m, ok := MemberAt(text[at:], k, v)
				w := want{ok: ok}
				if ok {
					w.key, w.value = tc.obj[m.KeyStart:m.KeyEnd], tc.obj[m.ValueStart:m.ValueEnd]
					if tc.obj[m.KeyStart-1] != '"' || tc.obj[m.KeyEnd] != '"' {
						t.Errorf("key %q: not between quotes at %d:%d", k, m.KeyStart, m.KeyEnd)
					}
				}
				got = append(got, w)
			})
			if end != at+len(tc.obj) {
				t.Fatalf("Object ended at %d, want %d", end, at+len(tc.obj))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("members %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("member %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	if _, ok := MemberAt(`{"a":1}`, "a", "1"); ok {
		t.Error("strings from outside the object located in it")
	}
}
