package jsonscan

import "testing"

func TestLookupText(t *testing.T) {
	doc := ` {"data": {"id": "r1", "n": 5, "ok": true, "none": null, "esc": "a\"\u00e9",
		"obj": {"x": [1, 2]}, "id": "second"}, "status": "RUNNING"} `
	for _, tc := range []struct {
		path []string
		text string
		ok   bool
	}{
		{[]string{"data", "id"}, "r1", true}, // the first of a duplicated key, as gjson
		{[]string{"data", "n"}, "5", true},
		{[]string{"data", "ok"}, "true", true},
		{[]string{"data", "none"}, "", true},
		{[]string{"data", "esc"}, `a"é`, true},
		{[]string{"data", "obj"}, `{"x": [1, 2]}`, true},
		{[]string{"status"}, "RUNNING", true},
		{[]string{"data", "missing"}, "", false},
		{[]string{"status", "x"}, "", false},
		{[]string{"data", "obj", "x", "0"}, "", false},
	} {
		v, ok := Lookup(doc, tc.path...)
		if ok != tc.ok || Text(v) != tc.text {
			t.Errorf("Lookup(%v) = %q (%q), %v; want %q, %v", tc.path, v, Text(v), ok, tc.text, tc.ok)
		}
	}
	if v, ok := Lookup(`[1]`); !ok || v != `[1]` {
		t.Errorf("Lookup without a path = %q, %v", v, ok)
	}
}

func TestField(t *testing.T) {
	for _, tc := range []struct {
		body string
		want string
	}{
		{`{"data":{"status":"SUCCEEDED"}}`, "SUCCEEDED"},
		{`{"data":{"status":"SUCCEEDED"}`, ""}, // truncated: not read
		{`{"data":{"status":1}}`, "1"},
		{`not json`, ""},
		{``, ""},
		{`{"data":[]}`, ""},
	} {
		b := []byte(tc.body)
		got := Field(b, "data", "status")
		if got != tc.want {
			t.Errorf("Field(%q) = %q, want %q", tc.body, got, tc.want)
		}
		for i := range b {
			b[i] = 'x' // the answer's buffer is reused: the field must not change
		}
		if got != tc.want {
			t.Errorf("Field(%q) is a view of the body: %q after reuse", tc.body, got)
		}
	}
}
