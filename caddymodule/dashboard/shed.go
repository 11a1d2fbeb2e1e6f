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
func (h *Handler) shed(w http.ResponseWriter, r *http.Request, err error, back string) bool {
	status, msg, retry := refusal(err)
	if status == 0 {
		return false
	}
	if status == http.StatusTooManyRequests {
		h.hold(r, time.Duration(retry)*time.Second)
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

// DefaultRefusalHold and maxHeldRefusals bound the hold of throttled
// posts (Handler.hold).
const (
	DefaultRefusalHold = time.Second
	maxHeldRefusals    = 1024
)

// hold delays a throttled post's answer by RefusalHold (at most retry,
// its Retry-After) while fewer than maxHeldRefusals are held. A client
// that sends its next guess as soon as the last is answered (a flood of
// parallel connections) is so paced to about one post a second per
// connection, where an immediate 429 let it send thousands a second,
// each costing the cores the paid API needs the HTTP work of a request.
// A held refusal costs a parked goroutine, no CPU; past the bound (or a
// client gone) the answer goes at once. A 503 of a busy hash pool is not
// held: it has waited for a slot already.
func (h *Handler) hold(r *http.Request, retry time.Duration) {
	d := min(h.RefusalHold, retry)
	if d <= 0 {
		return
	}
	select {
	case h.held <- struct{}{}:
		defer func() { <-h.held }()
	default:
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// capitalized upper-cases an ASCII first letter.
func capitalized(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}
