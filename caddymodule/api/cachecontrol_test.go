package api

import (
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
