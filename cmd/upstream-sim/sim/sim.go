// Package sim is the upstream simulator: an http.Handler that speaks both
// upstream protocols (actor_run and dataset_scrape) from fixture files, with
// per-target fault injection and a call log. It is importable so end-to-end
// tests and benchmarks can run it in-process; cmd/upstream-sim serves it.
//
// Protocol endpoints:
//
//	POST /v2/acts/{target}/run-sync-get-dataset-items?timeout=&maxItems=
//	POST /datasets/v3/scrape?dataset_id={target}&format=json&include_errors=true
//	GET  /datasets/v3/progress/{snapshot_id}
//	GET  /datasets/v3/snapshot/{snapshot_id}?format=json
//
// Control endpoints (never behind the token):
//
//	POST   /_sim/faults   body: a Fault or an array of them; replaces the target's fault
//	GET    /_sim/faults   the active faults
//	DELETE /_sim/faults   clears all faults (?target=id clears one)
//	GET    /_sim/calls    the call log, oldest first
//	DELETE /_sim/calls    clears the call log
//	GET    /_sim/health   200 {"status":"ok"}
package sim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"socialrouter/services"
)

// Protocol names as they appear in the call log; they match the source
// protocols of caddymodule/sources.
const (
	ProtocolActorRun      = "actor_run"
	ProtocolDatasetScrape = "dataset_scrape"
)

// AnyTarget is the fault target that applies to every target without a
// fault of its own, for load tests and blanket outages.
const AnyTarget = "*"

// MaxScrapeInputs is the most inputs one scrape request may carry, as on
// the real upstream; more is answered 400, which catches clients that do
// not batch.
const MaxScrapeInputs = 20

// DefaultPolls is how many polls an async snapshot needs when the fault
// does not say.
const DefaultPolls = 2

const (
	maxRequestBody  = 10 << 20
	defaultMaxCalls = 10000
	snapshotTTL     = time.Hour
)

// Options configure a simulator. The zero value serves the embedded
// services' examples on the routes their declarations derive, no token and
// no faults.
type Options struct {
	// Services is a services directory (*.cue and examples/) whose offers'
	// examples are served, each on its offer's target (DeclaredRoutes); nil
	// means the embedded declarations (package socialrouter/services).
	Services fs.FS
	// Fixtures adds payload files: they are read before the examples (a
	// file of the same path shadows one), and a routes.json at its root is
	// merged over the declared routes.
	Fixtures fs.FS
	// Routes maps target ids to fixture paths, merged over the others.
	Routes map[string]string
	// Token, if set, must be sent as Authorization: Bearer on protocol
	// endpoints (401 otherwise), like the real upstreams.
	Token string
	// Latency is added before every protocol answer.
	Latency time.Duration
	// Items is the default item count: actor_run answers repeat the fixture
	// items cyclically to this many; dataset_scrape answers this many
	// records per input. 0 keeps the fixture as it is (one record per input).
	Items int
	// Faults are installed at start, as if POSTed to /_sim/faults.
	Faults []Fault
	// MaxCalls bounds the call log (oldest dropped); default 10000.
	MaxCalls int
}

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
	// LatencyMS is added before answering (on top of Options.Latency). An
	// actor_run whose latency exceeds its ?timeout answers 408 at timeout.
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
	// Async (dataset_scrape) answers 202 with a snapshot id; the snapshot is
	// ready at the Polls-th poll of progress or snapshot.
	Async bool `json:"async,omitempty"`
	// Polls needed before an async snapshot is ready; default 2.
	Polls int `json:"polls,omitempty"`
	// SnapshotFailed (with Async) makes the snapshot's progress "failed".
	SnapshotFailed bool `json:"snapshot_failed,omitempty"`
	// Items overrides Options.Items for this target.
	Items int `json:"items,omitempty"`
	// Times limits the fault to the next n calls; 0 means forever. GET
	// /_sim/faults shows the calls left.
	Times int `json:"times,omitempty"`
}

func (f Fault) validate() error {
	switch {
	case f.Target == "":
		return errors.New("fault needs a target (an actor or dataset id, or \"*\")")
	case f.Status != 0 && (f.Status < 100 || f.Status > 599):
		return fmt.Errorf("fault status %d is not an HTTP status", f.Status)
	case f.RetryAfter < 0 || f.LatencyMS < 0 || f.StallMS < 0 || f.Polls < 0 || f.Items < 0 || f.Times < 0:
		return errors.New("fault numbers must not be negative")
	}
	return nil
}

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

// Sim is the simulator. It is an http.Handler and safe for concurrent use.
type Sim struct {
	opts   Options
	fsys   fs.FS
	routes map[string]string
	mux    *http.ServeMux

	mu        sync.Mutex
	faults    map[string]Fault
	calls     []Call
	snapshots map[string]*snapshot
	cache     map[string]*fixture
}

type snapshot struct {
	target  string
	body    []byte
	need    int
	polls   int
	failed  bool
	created time.Time
}

// fixture is one fixture file split into compact data and error items.
type fixture struct {
	data [][]byte
	errs [][]byte
}

// New builds a simulator. Unusable options (declarations that do not
// compile or lack an example, a bad initial fault, an unreadable
// routes.json in Options.Fixtures) panic, as they are programming errors of
// the caller (the command checks them first); use Check to validate
// fixtures.
func New(opts Options) *Sim {
	s := &Sim{
		opts:      opts,
		faults:    map[string]Fault{},
		snapshots: map[string]*snapshot{},
		cache:     map[string]*fixture{},
	}
	if s.opts.MaxCalls <= 0 {
		s.opts.MaxCalls = defaultMaxCalls
	}
	svc := opts.Services
	if svc == nil {
		svc = services.FS
	}
	routes, examples, err := DeclaredRoutes(svc)
	if err != nil {
		panic(fmt.Sprintf("sim: declared routes: %v", err))
	}
	s.routes = routes
	s.fsys = layered{examples}
	if opts.Fixtures != nil {
		s.fsys = layered{opts.Fixtures, examples}
		if err := mergeRoutesFile(s.routes, opts.Fixtures); err != nil && !errors.Is(err, fs.ErrNotExist) {
			panic(fmt.Sprintf("sim: fixtures routes: %v", err))
		}
	}
	for k, v := range opts.Routes {
		s.routes[k] = v
	}
	for _, f := range opts.Faults {
		if err := s.SetFault(f); err != nil {
			panic(fmt.Sprintf("sim: initial fault: %v", err))
		}
	}

	m := http.NewServeMux()
	m.HandleFunc("POST /v2/acts/{target}/run-sync-get-dataset-items", s.actorRun)
	m.HandleFunc("POST /datasets/v3/scrape", s.scrape)
	m.HandleFunc("GET /datasets/v3/progress/{id}", s.progress)
	m.HandleFunc("GET /datasets/v3/snapshot/{id}", s.snapshotDownload)
	m.HandleFunc("GET /_sim/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /_sim/faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Faults())
	})
	m.HandleFunc("POST /_sim/faults", s.postFaults)
	m.HandleFunc("DELETE /_sim/faults", func(w http.ResponseWriter, r *http.Request) {
		if t := r.URL.Query().Get("target"); t != "" {
			s.mu.Lock()
			delete(s.faults, t)
			s.mu.Unlock()
		} else {
			s.ClearFaults()
		}
		writeJSON(w, http.StatusOK, s.Faults())
	})
	m.HandleFunc("GET /_sim/calls", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Calls())
	})
	m.HandleFunc("DELETE /_sim/calls", func(w http.ResponseWriter, r *http.Request) {
		s.ClearCalls()
		w.WriteHeader(http.StatusNoContent)
	})
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, apiError("page-not-found", "no route for "+r.Method+" "+r.URL.Path))
	})
	s.mux = m
	return s
}

// LoadRoutes reads a routes file: a JSON object of target id → fixture path.
func LoadRoutes(data []byte) (map[string]string, error) {
	var routes map[string]string
	if err := json.Unmarshal(data, &routes); err != nil {
		return nil, fmt.Errorf("decoding routes: %w", err)
	}
	return routes, nil
}

// RoutesFile is the name of the routes table a fixtures directory may
// hold at its root: a JSON object mapping a target id to a fixture path.
const RoutesFile = "routes.json"

func mergeRoutesFile(dst map[string]string, fsys fs.FS) error {
	data, err := fs.ReadFile(fsys, RoutesFile)
	if err != nil {
		return err
	}
	routes, err := LoadRoutes(data)
	if err != nil {
		return err
	}
	for k, v := range routes {
		dst[k] = v
	}
	return nil
}

// ServeHTTP serves the protocol and control endpoints.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Routes returns a copy of the effective target → fixture table.
func (s *Sim) Routes() map[string]string {
	out := make(map[string]string, len(s.routes))
	for k, v := range s.routes {
		out[k] = v
	}
	return out
}

// Check loads every routed fixture, so a bad fixture directory or routes
// file fails at start instead of on the first call.
func (s *Sim) Check() error {
	var errs []error
	for target, path := range s.routes {
		if _, err := s.fixture(path); err != nil {
			errs = append(errs, fmt.Errorf("target %s: %w", target, err))
		}
	}
	return errors.Join(errs...)
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

// takeFault returns the fault for a call to target and uses up one of its
// times.
func (s *Sim) takeFault(target string) Fault {
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

// fixture loads and caches one fixture file, split into data and error
// items, each compacted.
func (s *Sim) fixture(path string) (*fixture, error) {
	s.mu.Lock()
	f, ok := s.cache[path]
	s.mu.Unlock()
	if ok {
		return f, nil
	}
	data, err := fs.ReadFile(s.fsys, path)
	if err != nil {
		return nil, fmt.Errorf("reading fixture: %w", err)
	}
	if !gjson.ValidBytes(data) || !gjson.ParseBytes(data).IsArray() {
		return nil, fmt.Errorf("fixture %s is not a JSON array", path)
	}
	f = &fixture{}
	var cerr error
	gjson.ParseBytes(data).ForEach(func(_, v gjson.Result) bool {
		var buf bytes.Buffer
		if cerr = json.Compact(&buf, []byte(v.Raw)); cerr != nil {
			return false
		}
		if isErrorItem(v) {
			f.errs = append(f.errs, buf.Bytes())
		} else {
			f.data = append(f.data, buf.Bytes())
		}
		return true
	})
	if cerr != nil {
		return nil, fmt.Errorf("compacting fixture %s: %w", path, cerr)
	}
	if len(f.data) == 0 {
		return nil, fmt.Errorf("fixture %s has no data items", path)
	}
	s.mu.Lock()
	s.cache[path] = f
	s.mu.Unlock()
	return f, nil
}

// isErrorItem mirrors the client's rule: a top-level non-null error,
// error_code or warning_code makes a per-input error record.
func isErrorItem(v gjson.Result) bool {
	if !v.IsObject() {
		return false
	}
	for _, k := range []string{"error", "error_code", "warning_code"} {
		if r := v.Get(k); r.Exists() && r.Type != gjson.Null {
			return true
		}
	}
	return false
}

// answer is a protocol answer decided but not yet written.
type answer struct {
	status int
	body   []byte
	header map[string]string
	stall  time.Duration
}

func (s *Sim) authorized(r *http.Request) bool {
	return s.opts.Token == "" || r.Header.Get("Authorization") == "Bearer "+s.opts.Token
}

func (s *Sim) actorRun(w http.ResponseWriter, r *http.Request) {
	target := r.PathValue("target")
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return // the client went away
	}
	a := s.actorRunAnswer(r, target, body)
	s.logCall(ProtocolActorRun, target, r, body, a.status)
	a.write(w, r)
}

func (s *Sim) actorRunAnswer(r *http.Request, target string, body []byte) answer {
	if !s.authorized(r) {
		return errAnswer(http.StatusUnauthorized, apiError("user-or-token-not-found", "User was not found or authentication token is not valid"))
	}
	path, ok := s.routes[target]
	if !ok {
		return errAnswer(http.StatusNotFound, apiError("record-not-found", "Actor was not found"))
	}
	if !json.Valid(body) {
		return errAnswer(http.StatusBadRequest, apiError("invalid-input", "Input is not valid JSON"))
	}
	fx, err := s.fixture(path)
	if err != nil {
		return errAnswer(http.StatusInternalServerError, apiError("internal-server-error", err.Error()))
	}
	f := s.takeFault(target)
	if !s.wait(r, f) {
		return errAnswer(http.StatusRequestTimeout, apiError("run-timeout-exceeded", "Actor run did not finish in the given timeout; it keeps running"))
	}
	if f.Status != 0 {
		return s.faultAnswer(f, ProtocolActorRun)
	}

	n := len(fx.data)
	if f.Items > 0 {
		n = f.Items
	} else if s.opts.Items > 0 {
		n = s.opts.Items
	}
	items := make([][]byte, 0, n+1)
	for i := range n {
		if f.AllErrors {
			items = append(items, errorRecord(nil, body))
		} else {
			items = append(items, fx.data[i%len(fx.data)])
		}
	}
	if f.ErrorRecords && !f.AllErrors {
		items = append(items, errorRecord(nil, body))
	}
	if mx, err := strconv.Atoi(r.URL.Query().Get("maxItems")); err == nil && mx > 0 && mx < len(items) {
		items = items[:mx]
	}
	return s.dataAnswer(http.StatusCreated, joinArray(items), f)
}

func (s *Sim) scrape(w http.ResponseWriter, r *http.Request) {
	target := r.URL.Query().Get("dataset_id")
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return
	}
	a := s.scrapeAnswer(r, target, body)
	s.logCall(ProtocolDatasetScrape, target, r, body, a.status)
	a.write(w, r)
}

func (s *Sim) scrapeAnswer(r *http.Request, target string, body []byte) answer {
	if !s.authorized(r) {
		return errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token"))
	}
	if target == "" {
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error", "dataset_id is required"))
	}
	path, ok := s.routes[target]
	if !ok {
		return errAnswer(http.StatusNotFound, scrapeError("dataset_not_found", "dataset does not exist: "+target))
	}
	if !gjson.ValidBytes(body) {
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error", "body is not valid JSON"))
	}
	root := gjson.ParseBytes(body)
	in := root
	if root.IsObject() {
		in = root.Get("input")
	}
	if !in.IsArray() {
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error", "body needs an \"input\" array"))
	}
	inputs := in.Array()
	switch {
	case len(inputs) == 0:
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error", "input is empty"))
	case len(inputs) > MaxScrapeInputs:
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error",
			fmt.Sprintf("at most %d inputs per scrape request, got %d", MaxScrapeInputs, len(inputs))))
	}
	fx, err := s.fixture(path)
	if err != nil {
		return errAnswer(http.StatusInternalServerError, scrapeError("internal_error", err.Error()))
	}
	f := s.takeFault(target)
	s.wait(r, f)
	if f.Status != 0 {
		return s.faultAnswer(f, ProtocolDatasetScrape)
	}

	per := 1
	if f.Items > 0 {
		per = f.Items
	} else if s.opts.Items > 0 {
		per = s.opts.Items
	}
	records := make([][]byte, 0, len(inputs)*per)
	for i, input := range inputs {
		raw := []byte(input.Raw)
		for j := range per {
			switch {
			case f.AllErrors || (f.ErrorRecords && i%2 == 1):
				var tmpl []byte
				if len(fx.errs) > 0 {
					tmpl = fx.errs[(i/2)%len(fx.errs)]
				}
				records = append(records, errorRecord(tmpl, raw))
			default:
				records = append(records, setInput(fx.data[(i*per+j)%len(fx.data)], raw))
			}
		}
	}
	out := joinArray(records)
	if f.Async {
		id := newSnapshotID()
		if f.Malformed {
			out = out[:len(out)/2]
		}
		need := f.Polls
		if need == 0 {
			need = DefaultPolls
		}
		s.mu.Lock()
		for k, sn := range s.snapshots {
			if time.Since(sn.created) > snapshotTTL {
				delete(s.snapshots, k)
			}
		}
		s.snapshots[id] = &snapshot{target: target, body: out, need: need, failed: f.SnapshotFailed, created: time.Now()}
		s.mu.Unlock()
		b, _ := json.Marshal(map[string]string{"snapshot_id": id,
			"message": "Your request is still in progress and may take a few minutes. Use the snapshot id to monitor its progress."})
		f.Malformed = false
		return s.dataAnswer(http.StatusAccepted, b, f)
	}
	return s.dataAnswer(http.StatusOK, out, f)
}

// poll counts one poll of a snapshot and says where it stands.
func (s *Sim) poll(id string) (sn *snapshot, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, ok := s.snapshots[id]
	if !ok {
		return nil, ""
	}
	sn.polls++
	switch {
	case sn.failed:
		return sn, "failed"
	case sn.polls >= sn.need:
		return sn, "ready"
	case sn.polls == 1:
		return sn, "starting"
	default:
		return sn, "running"
	}
}

func (s *Sim) progress(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token")).write(w, r)
		return
	}
	id := r.PathValue("id")
	sn, st := s.poll(id)
	if sn == nil {
		writeJSON(w, http.StatusNotFound, scrapeError("snapshot_not_found", "Snapshot does not exist"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"snapshot_id": id, "dataset_id": sn.target, "status": st})
}

func (s *Sim) snapshotDownload(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token")).write(w, r)
		return
	}
	sn, st := s.poll(r.PathValue("id"))
	switch st {
	case "":
		writeJSON(w, http.StatusNotFound, scrapeError("snapshot_not_found", "Snapshot does not exist"))
	case "failed":
		writeJSON(w, http.StatusBadRequest, scrapeError("snapshot_failed", "Snapshot failed"))
	case "ready":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(sn.body)
	default:
		writeJSON(w, http.StatusAccepted, map[string]string{"status": st, "message": "Snapshot is not ready yet, try again in 10s"})
	}
}

// wait sleeps the configured latency. For actor_run it honours ?timeout
// like the real sync endpoint: it reports false when the latency would
// exceed it, after waiting the timeout.
func (s *Sim) wait(r *http.Request, f Fault) bool {
	d := s.opts.Latency + time.Duration(f.LatencyMS)*time.Millisecond
	if d <= 0 {
		return true
	}
	if strings.HasPrefix(r.URL.Path, "/v2/acts/") {
		if secs, err := strconv.Atoi(r.URL.Query().Get("timeout")); err == nil && secs > 0 {
			if limit := time.Duration(secs) * time.Second; d > limit {
				sleep(r.Context(), limit)
				return false
			}
		}
	}
	sleep(r.Context(), d)
	return true
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

func joinArray(items [][]byte) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// setInput returns a copy of item whose top-level "input" is input, so a
// record can be matched to the input it answers.
func setInput(item, input []byte) []byte {
	v := gjson.GetBytes(item, "input")
	out := make([]byte, 0, len(item)+len(input)+10)
	if v.Exists() && v.Index > 0 {
		out = append(out, item[:v.Index]...)
		out = append(out, input...)
		return append(out, item[v.Index+len(v.Raw):]...)
	}
	out = append(out, `{"input":`...)
	out = append(out, input...)
	rest := bytes.TrimSpace(item[1:])
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// errorRecord is a per-input error record for input: the fixture's own
// template when it has one, else a dead_page record.
func errorRecord(tmpl, input []byte) []byte {
	if input == nil {
		input = []byte("null")
	}
	if tmpl != nil {
		return setInput(tmpl, input)
	}
	ts, _ := json.Marshal(time.Now().UTC().Format(time.RFC3339))
	out := []byte(`{"timestamp":`)
	out = append(out, ts...)
	out = append(out, `,"input":`...)
	out = append(out, input...)
	return append(out, `,"error":"simulated: page could not be collected","error_code":"dead_page"}`...)
}

func newSnapshotID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "s_" + hex.EncodeToString(b[:])
}
