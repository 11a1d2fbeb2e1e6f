package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// answer is a protocol answer decided but not yet written.
type answer struct {
	status int
	body   []byte
	header map[string]string
	stall  time.Duration
}

// serve is a protocol endpoint: it reads the request, decides the answer
// for the target the request names, logs the call and writes the answer.
func (s *Sim) serve(protocol string, target func(*http.Request) string, decide func(r *http.Request, target string, body []byte) answer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := target(r)
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
		if err != nil {
			return // the client went away
		}
		a := decide(r, t, body)
		s.logCall(protocol, t, r, body, a.status)
		a.write(w, r)
	}
}

func (s *Sim) authorized(r *http.Request) bool {
	return s.opts.Token == "" || r.Header.Get("Authorization") == "Bearer "+s.opts.Token
}

// dataAnswer is a success answer with the fault's decorations applied.
func (s *Sim) dataAnswer(status int, body []byte, f Fault) answer {
	a := answer{status: status, body: body}
	if f.Malformed {
		status = http.StatusOK
		a.status = status
		a.body = body[:len(body)/2]
	}
	return s.decorate(a, f)
}

func (s *Sim) decorate(a answer, f Fault) answer {
	a.header = map[string]string{}
	if f.RetryAfter > 0 {
		a.header["Retry-After"] = strconv.Itoa(f.RetryAfter)
	}
	a.stall = time.Duration(f.StallMS) * time.Millisecond
	return a
}

func errAnswer(status int, body []byte) answer { return answer{status: status, body: body} }

// write sends the answer; a stall sends the headers first and the body
// after the stall (or never, if the client gives up).
func (a answer) write(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if a.stall == 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	}
	w.WriteHeader(a.status)
	if a.stall > 0 {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		sleep(r.Context(), a.stall)
		if r.Context().Err() != nil {
			return
		}
	}
	_, _ = w.Write(a.body)
}

func apiError(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"type": typ, "message": msg}})
	return b
}

func scrapeError(code, msg string) []byte {
	b, _ := json.Marshal(map[string]string{"error": msg, "code": code})
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b []byte
	switch x := v.(type) {
	case []byte:
		b = x
	default:
		b, _ = json.Marshal(v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
