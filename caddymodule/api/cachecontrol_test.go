package api

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestParseCacheControl: the directives the cache honours, and the ones
// it ignores as RFC 9111 says of invalid ones.
func TestParseCacheControl(t *testing.T) {
	cases := []struct {
		in   []string
		want cacheControl
	}{
		{nil, cacheControl{}},
		{[]string{"max-age=600"}, cacheControl{set: true, maxAge: 600 * time.Second}},
		{[]string{`Max-Age="30"`}, cacheControl{set: true, maxAge: 30 * time.Second}},
		{[]string{"max-age=0"}, cacheControl{set: true}},
		{[]string{"no-cache"}, cacheControl{set: true, noCache: true}},
		{[]string{"no-store, max-age=60"}, cacheControl{set: true, noCache: true, maxAge: 60 * time.Second}},
		{[]string{"max-age=-1"}, cacheControl{}},
		{[]string{"max-age=soon", "private"}, cacheControl{}},
		{[]string{"only-if-cached", "max-age=5"}, cacheControl{set: true, maxAge: 5 * time.Second}},
	}
	for _, c := range cases {
		h := http.Header{}
		for _, v := range c.in {
			h.Add("Cache-Control", v)
		}
		got := parseCacheControl(h)
		got.raw = ""
		if got != c.want {
			t.Errorf("%q: %+v, want %+v", c.in, got, c.want)
		}
	}
}

// TestTakeMaxAge: an MCP tool's max_age leaves the arguments as the
// Cache-Control it stands for; a bad one is invalid_field.
func TestTakeMaxAge(t *testing.T) {
	cases := []struct {
		arg     string
		want    cacheControl
		invalid bool
	}{
		{"", cacheControl{}, false},
		{"600", cacheControl{raw: "max-age=600", set: true, maxAge: 600 * time.Second}, false},
		{"-1", cacheControl{raw: "no-cache", set: true, noCache: true}, false},
		{"-2", cacheControl{}, true},
		{`"60"`, cacheControl{}, true},
	}
	for _, c := range cases {
		args := map[string]json.RawMessage{"url": json.RawMessage(`"https://x"`)}
		if c.arg != "" {
			args["max_age"] = json.RawMessage(c.arg)
		}
		got, e := TakeMaxAge(args)
		if (e != nil) != c.invalid || e != nil && e.Code != "invalid_field" {
			t.Errorf("max_age %s: error %v, want invalid %v", c.arg, e, c.invalid)
			continue
		}
		if _, left := args["max_age"]; got != c.want || left {
			t.Errorf("max_age %s: %+v (left in args %v), want %+v", c.arg, got, left, c.want)
		}
	}
}
