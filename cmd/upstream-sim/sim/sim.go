// Package sim is the upstream simulator: an http.Handler that speaks both
// upstream protocols (actor_run and dataset_scrape) from fixture files, with
// per-target fault injection and a call log. It is importable so end-to-end
// tests and benchmarks can run it in-process; cmd/upstream-sim serves it.
//
// Jobs take their time: every actor run and snapshot is a job with a
// duration (a fault's duration_s, in upstream seconds), scaled by
// Options.TimeScale (-time-scale 0.01 turns a 60 s wait into 0.6 s), as are
// the upstreams' documented waits (waitForFinish up to 60 s, the sync
// actor endpoint's 300 s, /scrape's minute). Each job is in the cost
// ledger until the simulator stops.
//
// Protocol endpoints (the upstreams' documented ones):
//
//	POST /v2/acts/{target}/runs?timeout=&maxItems=&maxTotalChargeUsd=&webhooks=  → 201 {"data": run}
//	GET  /v2/actor-runs/{id}?waitForFinish=                            → {"data": run}
//	POST /v2/actor-runs/{id}/abort                                     → {"data": run}
//	GET  /v2/datasets/{id}/items?format=json&clean=&offset=&limit=      → [items]
//	POST /v2/acts/{target}/run-sync-get-dataset-items?timeout=&maxItems=
//	POST /datasets/v3/scrape?dataset_id={target}&format=json&include_errors=true  (≤ 20 inputs, no discovery)
//	POST /datasets/v3/trigger?dataset_id={target}&type=&discover_by=&limit_per_input=&limit_multiple_results=&notify=&auth_header=
//	GET  /datasets/v3/progress/{snapshot_id}
//	GET  /datasets/v3/snapshot/{snapshot_id}?format=json
//	POST /datasets/v3/snapshot/{snapshot_id}/cancel
//
// A run started with ad-hoc webhooks, and a trigger with notify, call back
// when the job ends, as documented (callbacks.go); fault drop_callbacks
// loses them. The ledger counts each job's status polls and callbacks.
//
// An input that contains one of Options.DeadInputs (default
// "does-not-exist") is unknown: it is answered with a dead_page error row,
// as the real sources answer a page that is gone.
//
// Control endpoints (never behind the token):
//
//	POST   /_sim/faults   body: a Fault or an array of them; replaces the target's fault
//	GET    /_sim/faults   the active faults
//	DELETE /_sim/faults   clears all faults (?target=id clears one)
//	GET    /_sim/calls    the call log, oldest first (job starts only)
//	GET    /_sim/ledger   the upstream cost ledger: every run and snapshot
//	DELETE /_sim/ledger   aborts every running job and empties the ledger
//	DELETE /_sim/calls    clears the call log
//	GET    /_sim/health   200 {"status":"ok"}
package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"socialrouter/services"
)

// Protocol names as they appear in the call log; they match the source
// protocols of caddymodule/sources.
const (
	ProtocolActorRun      = "actor_run"
	ProtocolDatasetScrape = "dataset_scrape"
)

const (
	maxRequestBody  = 10 << 20
	defaultMaxCalls = 10000
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
	// TimeScale multiplies every upstream duration (job durations, the
	// documented waits, latencies); 0 means 1.
	TimeScale float64
	// DeadInputs are substrings that make an input unknown (a dead_page
	// row); nil means DefaultDeadInputs.
	DeadInputs []string
}

// DefaultDeadInputs marks the inputs the simulator answers as gone.
var DefaultDeadInputs = []string{"does-not-exist"}

// Sim is the simulator. It is an http.Handler and safe for concurrent use.
type Sim struct {
	opts   Options
	fsys   fs.FS
	routes map[string]string
	mux    *http.ServeMux

	scale float64

	mu       sync.Mutex
	faults   map[string]Fault
	calls    []Call
	jobs     map[string]*job
	datasets map[string]*job
	order    []string
	cache    map[string]*fixture
}

// New builds a simulator. Unusable options (declarations that do not
// compile or lack an example, a bad initial fault, an unreadable
// routes.json in Options.Fixtures) panic, as they are programming errors of
// the caller (the command checks them first); use Check to validate
// fixtures.
func New(opts Options) *Sim {
	s := &Sim{
		opts:     opts,
		faults:   map[string]Fault{},
		jobs:     map[string]*job{},
		datasets: map[string]*job{},
		cache:    map[string]*fixture{},
		scale:    opts.TimeScale,
	}
	if s.scale <= 0 {
		s.scale = 1
	}
	if s.opts.DeadInputs == nil {
		s.opts.DeadInputs = DefaultDeadInputs
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
	actor := func(r *http.Request) string { return r.PathValue("target") }
	dataset := func(r *http.Request) string { return r.URL.Query().Get("dataset_id") }
	m.HandleFunc("POST /v2/acts/{target}/run-sync-get-dataset-items", s.serve(ProtocolActorRun, actor, s.runSync))
	m.HandleFunc("POST /v2/acts/{target}/runs", s.serve(ProtocolActorRun, actor, s.runStart))
	m.HandleFunc("GET /v2/actor-runs/{id}", s.runGet)
	m.HandleFunc("POST /v2/actor-runs/{id}/abort", s.runAbort)
	m.HandleFunc("GET /v2/datasets/{id}/items", s.datasetItems)
	m.HandleFunc("POST /datasets/v3/scrape", s.serve(ProtocolDatasetScrape, dataset, s.scrapeAnswer))
	m.HandleFunc("POST /datasets/v3/trigger", s.serve(ProtocolDatasetScrape, dataset, s.triggerAnswer))
	m.HandleFunc("GET /datasets/v3/progress/{id}", s.progress)
	m.HandleFunc("GET /datasets/v3/snapshot/{id}", s.snapshotDownload)
	m.HandleFunc("POST /datasets/v3/snapshot/{id}/cancel", s.snapshotCancel)
	m.HandleFunc("GET /_sim/ledger", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Ledger())
	})
	m.HandleFunc("DELETE /_sim/ledger", func(w http.ResponseWriter, r *http.Request) {
		s.ClearLedger()
		w.WriteHeader(http.StatusNoContent)
	})
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
