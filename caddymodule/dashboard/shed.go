package dashboard

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"time"

	"socialrouter/caddymodule/passhash"
)

// refusal classifies an attempt the throttle or the hash pool turned
// away: its status (429 throttled, 503 every hash slot busy), message and
// Retry-After in seconds; status 0 for any other error.
func refusal(err error) (status int, msg string, retry int) {
	var t errThrottled
	switch {
	case errors.As(err, &t):
		return http.StatusTooManyRequests, t.Error(), int((t.wait + time.Second - 1) / time.Second)
	case errors.Is(err, passhash.ErrBusy):
		return http.StatusServiceUnavailable, "the service is busy; try again in a moment", 1
	}
	return 0, "", 0
}

// shed answers a refused sign-in or invitation post with a small fixed
// page and Retry-After: no template, no form, no store read. A flood of
// such posts is answered at the cost of a few writes, so it takes as
// little as possible of the cores the paid API needs (the re-rendered
// form was a fifth of the gateway's CPU under a 500-a-second flood). The
// page links back to the form. It reports false for any other error,
// which the caller answers itself.
func (h *Handler) shed(w http.ResponseWriter, err error, back string) bool {
	status, msg, retry := refusal(err)
	if status == 0 {
		return false
	}
	hd := w.Header()
	hd.Set("Retry-After", fmt.Sprint(retry))
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>%s</title><link rel="stylesheet" href="%sstatic/style.css"><main><h1>%s</h1><p role="alert">%s.</p><p><a href="%s">Back to the form</a></p></main></html>`,
		http.StatusText(status), html.EscapeString(h.Path), http.StatusText(status), html.EscapeString(capitalized(msg)), html.EscapeString(back))
	return true
}

// capitalized upper-cases an ASCII first letter.
func capitalized(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}
