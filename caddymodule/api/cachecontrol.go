package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// cacheControl is what a call's Cache-Control header asks of the
// freshness cache (issue 36): records at most maxAge old, or (noCache)
// live work. Without the header (set false) the service's declared
// default max age applies.
type cacheControl struct {
	// raw is the header as sent, kept with an async run's request.
	raw     string
	set     bool
	noCache bool
	maxAge  time.Duration
}

// parseCacheControl reads the request directives the cache honours:
// no-cache (and no-store) force live work, max-age=<seconds> bounds the
// age accepted. Other directives, and a max-age that is not a
// non-negative integer, are ignored, as RFC 9111 says of invalid ones.
func parseCacheControl(h http.Header) cacheControl {
	cc := cacheControl{raw: strings.Join(h.Values("Cache-Control"), ", ")}
	for _, line := range h.Values("Cache-Control") {
		for _, d := range strings.Split(line, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-cache", "no-store":
				cc.set, cc.noCache = true, true
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
				if err == nil && n >= 0 {
					cc.set, cc.maxAge = true, time.Duration(min(n, 1<<31))*time.Second
				}
			}
		}
	}
	return cc
}

// setAge sets the answer's Age: the seconds since the oldest record served
// was fetched, on runs the cache took part in.
func setAge(w http.ResponseWriter, since time.Time) {
	if since.IsZero() {
		return
	}
	w.Header().Set("Age", strconv.FormatInt(max(0, int64(time.Since(since)/time.Second)), 10))
}
