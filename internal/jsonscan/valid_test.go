package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// reference is what Checker.Valid must say: encoding/json decodes the text
// into Go values (numbers as float64, depth ≤ 10000), its bytes are valid
// UTF-8 and no object repeats a key.
func reference(b []byte) bool {
	var v any
	if json.Unmarshal(b, &v) != nil || !utf8.Valid(b) {
		return false
	}
	return !refDuplicate(b)
}

// refDuplicate reports, through encoding/json's tokens, whether an object
// of the valid JSON text b repeats a key: the reference of the checker's
// duplicate reports, independent of it.
func refDuplicate(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj  bool
		key  bool // the next string token of an object is a key
		seen map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k := tok.(string)
			if top.seen[k] {
				return true
			}
			top.seen[k] = true
			top.key = false
			continue
		}
		if top != nil && top.obj {
			top.key = true // this token is a value: a key comes next
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, key: true, seen: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

var cases = []struct {
	in    string
	valid bool
}{
	{`{}`, true},
	{` [1, "a", null, true, false, {"a": [{}]}] `, true},
	{`-0.5e+3`, true},
	{`"\u00e9\ud800\n"`, true},
	{`{"a":1,"b":{"a":2}}`, true},
	{`{"a":1,"a":2}`, false},
	{`{"\u0061":1,"a":2}`, false},
	{`{"a":{"x":1,"x":2}}`, false},
	{`[{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k1":0}]`, false},
	{`1e400`, false},
	{`"` + "\xff" + `"`, false},
	{"\"tab\there\"", false},
	{`"\x"`, false},
	{`{"a":1,}`, false},
	{`[1 2]`, false},
	{`01`, false},
	{`nul`, false},
	{``, false},
	{`  `, false},
	{`{} {}`, false},
	{strings.Repeat("[", 10000) + strings.Repeat("]", 10000), true},
	{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), false},
}

func TestValid(t *testing.T) {
	var c Checker
	for _, tc := range cases {
		if got := c.Valid(tc.in); got != tc.valid {
			t.Errorf("Valid(%.60q) = %v, want %v", tc.in, got, tc.valid)
		}
		if ref := reference([]byte(tc.in)); ref != tc.valid {
			t.Errorf("reference(%.60q) = %v: the table is wrong", tc.in, ref)
		}
	}
	if len(c.keys) != 0 {
		t.Errorf("the checker keeps %d keys after its calls", len(c.keys))
	}
}

func TestObjectMembers(t *testing.T) {
	var c Checker
	s := `{"a" : 1 , "\u0062":{"c":[2]},"d":"x\"y"} tail`
	var got []string
	end := c.Object(s, 0, func(k, v string) { got = append(got, k+"="+v) })
	if want := strings.Index(s, " tail"); end != want {
		t.Fatalf("Object end = %d, want %d", end, want)
	}
	want := []string{`a=1`, `b={"c":[2]}`, `d="x\"y"`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("members %q, want %q", got, want)
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `[1]`, `{"a":}`, `{"a":1`} {
		if end := c.Object(bad, 0, func(string, string) {}); end != -1 {
			t.Errorf("Object(%q) = %d, want -1", bad, end)
		}
	}
}

// FuzzValid holds Checker.Valid to the reference on any input.
func FuzzValid(f *testing.F) {
	for _, tc := range cases[:len(cases)-2] {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Checker
		if got, want := c.Valid(string(b)), reference(b); got != want {
			t.Fatalf("Valid(%q) = %v, reference %v", b, got, want)
		}
	})
}

func TestIsPlainString(t *testing.T) {
	for in, want := range map[string]bool{
		`"https://x.example/a"`: true, `""`: true, `"é"`: true,
		`"a\"b"`: false, `"a\u00e9"`: false, "\"\xff\"": false, "\"tab\there\"": false,
		`"`: false, `"a" `: false, ` "a"`: false, `"a""b"`: false, `5`: false, ``: false,
	} {
		if got := IsPlainString(in); got != want {
			t.Errorf("IsPlainString(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzSyntax holds the lax check to encoding/json's syntax and its duplicate
// report to the token reference, on any input.
//
//	go test -run '^$' -fuzz FuzzSyntax -fuzztime 60s ./internal/jsonscan/
func FuzzSyntax(f *testing.F) {
	for _, tc := range cases[:len(cases)-2] {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(`{"a":"\xff","a":1e999}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Checker
		got, want := c.Syntax(string(b)), json.Valid(b)
		if got != want {
			t.Fatalf("Syntax(%q) = %v, json.Valid %v", b, got, want)
		}
		if !want {
			return
		}
		_, dup := c.Duplicate()
		if ref := refDuplicate(b); dup != ref {
			t.Fatalf("Duplicate(%q) = %v, reference %v", b, dup, ref)
		}
	})
}

func TestSyntaxLax(t *testing.T) {
	var c Checker
	for _, tc := range []struct {
		in       string
		valid    bool
		dup      string
		strictOK bool
	}{
		{`{"a":"` + "\xff" + `"}`, true, "", false},
		{`[1e999]`, true, "", false},
		{`{"a":1,"a":2}`, true, "a", false},
		{`{"a":{"x":1,"x":2},"b":1}`, true, "x", false},
		{`{"a":1}`, true, "", true},
		{`{"a":1,}`, false, "", false},
		{"[\x80]", false, "", false},
	} {
		if got := c.Syntax(tc.in); got != tc.valid {
			t.Errorf("Syntax(%q) = %v, want %v", tc.in, got, tc.valid)
		}
		if d, _ := c.Duplicate(); d != tc.dup {
			t.Errorf("Duplicate after Syntax(%q) = %q, want %q", tc.in, d, tc.dup)
		}
		if got := c.Valid(tc.in); got != tc.strictOK {
			t.Errorf("Valid(%q) = %v, want %v (strict after lax)", tc.in, got, tc.strictOK)
		}
		if json.Valid([]byte(tc.in)) != tc.valid {
			t.Errorf("json.Valid(%q) disagrees with the table", tc.in)
		}
	}
}
