package jsonscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// decode reads the value at s[i] with the scanners alone, as encoding/json
// with UseNumber would decode it, and returns the index after it.
func decode(t *testing.T, s string, i int) (any, int) {
	t.Helper()
	end := SkipValue(s, i)
	switch s[i] {
	case '{':
		m := map[string]any{}
		j := i + 1
		for {
			k, val, next, ok := NextMember(s, j)
			if !ok {
				if s[next] != '}' || next+1 != end {
					t.Fatalf("object at %d of %q: members end at %d, SkipValue at %d", i, s, next, end)
				}
				return m, end
			}
			v, ve := decode(t, s, next-len(val))
			if ve != next {
				t.Fatalf("member %q of %q: value ends at %d, NextMember says %d", k, s, ve, next)
			}
			m[k] = v // the last duplicate wins, as in encoding/json
			j = next
		}
	case '[':
		a := []any{}
		j := i + 1
		for {
			val, next, ok := NextElem(s, j)
			if !ok {
				if s[next] != ']' || next+1 != end {
					t.Fatalf("array at %d of %q: elements end at %d, SkipValue at %d", i, s, next, end)
				}
				return a, end
			}
			v, _ := decode(t, s, next-len(val))
			a = append(a, v)
			j = next
		}
	case '"':
		return Unquote(s[i+1 : end-1]), end
	case 't':
		return true, end
	case 'f':
		return false, end
	case 'n':
		return nil, end
	}
	return json.Number(s[i:end]), end
}

// FuzzScan holds the scanners to encoding/json: on any valid UTF-8 JSON
// text, walking it with NextMember, NextElem, SkipValue and Unquote gives
// the value json.Unmarshal gives, and the walk ends where the text does.
//
//	go test -run '^$' -fuzz FuzzScan -fuzztime 60s ./internal/jsonscan/
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-1.5e+10`, `""`, ` {"a" : [1, "x", {"b":null}] } `,
		`{"a":1,"a":2}`, `{"\u0061":1,"a\"b":"c\\"}`, `["\ud83d\ude00","\ud800","\ud800\u0041","\/"]`,
		`{"error":"x","items":[{"error_code":null}]}`, `[{"a":"]},{"},"\\\\"]`, `{"k":{"k":{"k":[[],{}]}}}`,
		"[\"\u2028\",\"\\u2028\",\"\\t\"]", `{"data":null,"x":[1,2,3]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || !utf8.Valid(b) {
			return
		}
		var want any
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := SkipSpace(s, 0)
		got, end := decode(t, s, i)
		if SkipSpace(s, end) != len(s) {
			t.Fatalf("%q: the value ends at %d, text at %d", s, end, len(s))
		}
		if TrimSpace(s) != s[i:end] {
			t.Fatalf("%q: TrimSpace = %q, value %q", s, TrimSpace(s), s[i:end])
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: scanned %#v, encoding/json %#v", s, got, want)
		}
	})
}

// TestInvalidText pins what the scanners promise on text that is not
// JSON: an unterminated string ends the text, and Bytes is the bytes.
func TestInvalidText(t *testing.T) {
	for _, tc := range []struct {
		s    string
		i    int
		want int
	}{
		{`"abc`, 0, 4}, {`"a\"`, 0, 4}, {`"a\\"x`, 0, 5}, {`["x`, 1, 3},
	} {
		if got := SkipString(tc.s, tc.i); got != tc.want {
			t.Errorf("SkipString(%q, %d) = %d, want %d", tc.s, tc.i, got, tc.want)
		}
	}
	if got := SkipValue(`{"a":[1,2`, 0); got != 9 {
		t.Errorf("SkipValue of an unclosed object = %d, want the end of the text", got)
	}
	b := []byte(`{"a":1}`)
	if s := Bytes(b); s != string(b) {
		t.Errorf("Bytes = %q", s)
	}
	if s := Bytes(nil); s != "" {
		t.Errorf("Bytes(nil) = %q", s)
	}
	if k, v, _, ok := NextMember(`{"\u00e9t\u00e9":"x"}`, 1); !ok || k != "été" || v != `"x"` {
		t.Errorf("NextMember with an escaped key = %q %q %v", k, v, ok)
	}
}
