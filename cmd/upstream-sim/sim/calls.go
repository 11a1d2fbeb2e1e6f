package sim

import (
	"encoding/json"
	"net/http"
	"time"
)

// Call is one protocol request as recorded in the call log.
type Call struct {
	Protocol string            `json:"protocol"`
	Target   string            `json:"target"`
	Query    map[string]string `json:"query"`
	Body     json.RawMessage   `json:"body"`
	At       time.Time         `json:"at"`
	// Status is what the simulator answered.
	Status int `json:"status"`
}

// Calls returns the call log, oldest first.
func (s *Sim) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call{}, s.calls...)
}

// ClearCalls empties the call log.
func (s *Sim) ClearCalls() {
	s.mu.Lock()
	s.calls = nil
	s.mu.Unlock()
}

func (s *Sim) logCall(protocol, target string, r *http.Request, body []byte, status int) {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = v[0]
	}
	b := json.RawMessage(body)
	if !json.Valid(body) {
		b, _ = json.Marshal(string(body))
	}
	c := Call{Protocol: protocol, Target: target, Query: q, Body: b, At: time.Now().UTC(), Status: status}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) >= s.opts.MaxCalls {
		s.calls = append(s.calls[:0], s.calls[len(s.calls)-s.opts.MaxCalls+1:]...)
	}
	s.calls = append(s.calls, c)
}
