package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// AnyTarget is the fault target that applies to every target without a
// fault of its own, for load tests and blanket outages.
const AnyTarget = "*"

// Fault is what a target should do wrong. Zero fields mean "behave".
type Fault struct {
	// Target is the actor or dataset id, or "*" for every target.
	Target string `json:"target"`
	// Status answers this HTTP status with the protocol's error JSON.
	Status int `json:"status,omitempty"`
	// ErrorType overrides the error type of a Status answer (e.g.
	// "run-failed" instead of the default "invalid-input" for a 400).
	ErrorType string `json:"error_type,omitempty"`
	// RetryAfter, in seconds, is sent as Retry-After with any answer.
	RetryAfter int `json:"retry_after,omitempty"`
	// LatencyMS is added to the job's duration (on top of Options.Latency
	// and DurationS), scaled; before a Status answer it delays the answer.
	// An actor run whose duration exceeds its ?timeout ends TIMED-OUT (the
	// sync endpoint answers 408).
	LatencyMS int `json:"latency_ms,omitempty"`
	// Malformed answers 200 with a truncated JSON body.
	Malformed bool `json:"malformed,omitempty"`
	// ErrorRecords mixes per-input error records in: dataset_scrape answers
	// an error record for every second input (1, 3, …); actor_run appends
	// one error item.
	ErrorRecords bool `json:"error_records,omitempty"`
	// AllErrors makes every item an error record.
	AllErrors bool `json:"all_errors,omitempty"`
	// StallMS sends the status and headers, then waits this long before the
	// body, to trip a client's soft timeout.
	StallMS int `json:"stall_ms,omitempty"`
	// Async (dataset_scrape) makes /scrape answer 202 with a snapshot id at
	// once; the snapshot is ready at the Polls-th poll of progress or
	// snapshot (and once its duration has passed).
	Async bool `json:"async,omitempty"`
	// Polls needed before an async snapshot is ready; default 2.
	Polls int `json:"polls,omitempty"`
	// SnapshotFailed (with Async) makes the snapshot's progress "failed".
	SnapshotFailed bool `json:"snapshot_failed,omitempty"`
	// Items overrides Options.Items for this target: actor_run items per
	// run, dataset_scrape records per input (a discovery's default is
	// DefaultDiscoverItems).
	Items int `json:"items,omitempty"`
	// DurationS is how long the job (an actor run, a collection) takes, in
	// upstream seconds, scaled by the time scale. A sync wait longer than
	// the upstream's limit then answers as the upstream does: actor_run's
	// sync endpoint 408 after 300 s (the run goes on), /scrape 202 with a
	// snapshot id after 60 s.
	DurationS float64 `json:"duration_s,omitempty"`
	// KeepRunning makes the job never end on its own: it runs (and accrues
	// runtime in the ledger) until aborted, cancelled, or its run timeout.
	KeepRunning bool `json:"keep_running,omitempty"`
	// IgnoreMaxItems makes the actor collect more items than maxItems (the
	// upstream still charges at most maxItems).
	IgnoreMaxItems bool `json:"ignore_max_items,omitempty"`
	// RunStatus "FAILED" ends the run FAILED instead of SUCCEEDED.
	RunStatus string `json:"run_status,omitempty"`
	// NotReady is the form of a snapshot download before the snapshot is
	// ready: "202" (default) or "200", both with {"status","message"}.
	NotReady string `json:"not_ready,omitempty"`
	// BuildingDownloads answers this many downloads with the not-ready body
	// even after progress said ready.
	BuildingDownloads int `json:"building_downloads,omitempty"`
	// ValidationErrors answers the scrape or trigger 400
	// {"validation_errors": [...]} with these messages.
	ValidationErrors []string `json:"validation_errors,omitempty"`
	// PollStatus answers the next poll (run GET, progress) with this HTTP
	// status instead; with times it counts polls too.
	PollStatus int `json:"poll_status,omitempty"`
	// DeadInputs adds substrings that make an input unknown (to those of
	// Options.DeadInputs): its answer is a dead_page error row.
	DeadInputs []string `json:"dead_inputs,omitempty"`
	// DropCallbacks makes the target's jobs end without their callbacks
	// (ad-hoc webhooks, notify): a lost callback, which a waiter must
	// survive by polling. The ledger shows the delivery as dropped.
	DropCallbacks bool `json:"drop_callbacks,omitempty"`
	// Times limits the fault to the next n calls; 0 means forever. GET
	// /_sim/faults shows the calls left.
	Times int `json:"times,omitempty"`
	// Inputs, if set, limits the fault to the run starts and scrapes whose
	// request body names one of these inputs (a substring): one batch of
	// a call fails while its other batches are answered. Other calls
	// behave and use none of the fault's times.
	Inputs []string `json:"inputs,omitempty"`
}

func (f Fault) validate() error {
	switch {
	case f.Target == "":
		return errors.New("fault needs a target (an actor or dataset id, or \"*\")")
	case f.Status != 0 && (f.Status < 100 || f.Status > 599):
		return fmt.Errorf("fault status %d is not an HTTP status", f.Status)
	case f.PollStatus != 0 && (f.PollStatus < 100 || f.PollStatus > 599):
		return fmt.Errorf("fault poll_status %d is not an HTTP status", f.PollStatus)
	case f.NotReady != "" && f.NotReady != "200" && f.NotReady != "202":
		return fmt.Errorf("fault not_ready %q is neither \"200\" nor \"202\"", f.NotReady)
	case f.RunStatus != "" && f.RunStatus != "FAILED":
		return fmt.Errorf("fault run_status %q: only \"FAILED\" is simulated", f.RunStatus)
	case f.RetryAfter < 0 || f.LatencyMS < 0 || f.StallMS < 0 || f.Polls < 0 || f.Items < 0 || f.Times < 0 ||
		f.DurationS < 0 || f.BuildingDownloads < 0:
		return errors.New("fault numbers must not be negative")
	}
	return nil
}

// SetFault installs f for its target, replacing any previous fault there.
func (s *Sim) SetFault(f Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	s.faults[f.Target] = f
	s.mu.Unlock()
	return nil
}

// ClearFaults removes every fault.
func (s *Sim) ClearFaults() {
	s.mu.Lock()
	s.faults = map[string]Fault{}
	s.mu.Unlock()
}

// Faults lists the active faults by target.
func (s *Sim) Faults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Fault, 0, len(s.faults))
	for _, f := range s.faults {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

// takeFault returns the fault for a call to target whose request body is
// body (nil for a poll) and uses up one of its times.
func (s *Sim) takeFault(target string, body []byte) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := target
	f, ok := s.faults[key]
	if !ok {
		key = AnyTarget
		if f, ok = s.faults[key]; !ok {
			return Fault{}
		}
	}
	if !f.names(body) {
		return Fault{}
	}
	if f.Times > 0 {
		if f.Times == 1 {
			delete(s.faults, key)
		} else {
			g := f
			g.Times--
			s.faults[key] = g
		}
	}
	return f
}

func (s *Sim) postFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError("invalid-input", "reading fault body: "+err.Error()))
		return
	}
	var list []Fault
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		err = json.Unmarshal(body, &list)
	} else {
		var f Fault
		err = json.Unmarshal(body, &f)
		list = []Fault{f}
	}
	if err == nil {
		for _, f := range list {
			if err = f.validate(); err != nil {
				break
			}
		}
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError("invalid-input", "fault: "+err.Error()))
		return
	}
	for _, f := range list {
		_ = s.SetFault(f)
	}
	writeJSON(w, http.StatusOK, s.Faults())
}

// names reports whether a call with request body body is one the fault
// applies to: any call without Inputs, else one naming one of them.
func (f Fault) names(body []byte) bool {
	if len(f.Inputs) == 0 {
		return true
	}
	for _, in := range f.Inputs {
		if in != "" && bytes.Contains(body, []byte(in)) {
			return true
		}
	}
	return false
}

// peekFault returns the fault of target's polls without using one of its
// times: none when the fault is limited to some inputs (a poll names no
// input).
func (s *Sim) peekFault(target string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.faults[target]
	if !ok {
		f, ok = s.faults[AnyTarget]
	}
	return f, ok && len(f.Inputs) == 0
}

// unknown reports whether an input names nothing the upstream can collect:
// it contains one of the simulator's dead-input markers or the fault's.
// The real sources answer such an input with a dead_page error row.
func (s *Sim) unknown(input string, f Fault) bool {
	for _, m := range append(s.opts.DeadInputs, f.DeadInputs...) {
		if m != "" && strings.Contains(input, m) {
			return true
		}
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// faultAnswer is the protocol's error answer for a Status fault.
func (s *Sim) faultAnswer(f Fault, protocol string) answer {
	typ := f.ErrorType
	if typ == "" {
		typ = defaultErrorType(f.Status, protocol)
	}
	msg := fmt.Sprintf("simulated fault: HTTP %d", f.Status)
	var body []byte
	if protocol == ProtocolActorRun {
		body = apiError(typ, msg)
	} else {
		body = scrapeError(typ, msg)
	}
	a := errAnswer(f.Status, body)
	if f.Status >= 200 && f.Status < 300 {
		a.body = []byte(`[]`)
	}
	return s.decorate(a, f)
}

func defaultErrorType(status int, protocol string) string {
	if protocol == ProtocolDatasetScrape {
		switch status {
		case 400:
			return "validation_error"
		case 401, 403:
			return "unauthorized"
		case 402:
			return "insufficient_balance"
		case 404:
			return "dataset_not_found"
		case 429:
			return "rate_limited"
		}
		return "error"
	}
	switch status {
	case 400:
		return "invalid-input"
	case 401:
		return "user-or-token-not-found"
	case 402:
		return "not-enough-usage-to-run-paid-actor"
	case 403:
		return "insufficient-permissions"
	case 404:
		return "record-not-found"
	case 408:
		return "run-timeout-exceeded"
	case 429:
		return "rate-limit-exceeded"
	}
	return "internal-server-error"
}
