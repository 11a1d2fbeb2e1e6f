package router

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/sources"
)

// testCUE declares a tiny registry: profile.info (per_call) with two live
// offers and a coming_soon one, post.list (per_input), and post.info whose
// offer declares no request program.
const testCUE = `package sdr

#R: {
	name?:         string
	source?:       string
	extracted_at?: string
	input?:        string
}

sources: {
	source_a: {name: "Source A", description: "actor runs", protocol: "actor_run"}
	source_b: {name: "Source B", description: "dataset scrapes", protocol: "dataset_scrape"}
}

_accepts: [{
	format:  "https://example.com/<kind>/<id>"
	example: "https://example.com/in/alice"
	pattern: "https://example\\.com/[a-z]+/[A-Za-z0-9_-]+/?"
}]

_norm: """
	if .error then empty
	elif .skip then empty
	elif .bad then error("bad item")
	else {name: .name, source: $src, extracted_at: $now, input: $input}
	end
	"""

services: "pro_net/profile.info": {
	platform:    "pro_net"
	service:     "profile.info"
	description: "A profile."
	input_kind:  "url"
	accepts:     _accepts
	options: [
		{name: "deep", type: "boolean", default: false, description: "Deep."},
		{name: "lang", type: "string", description: "Language."},
	]
	record: "#R"
	offers: [{
		offer:            "source_a/actor_1"
		price_per_record: 0.002
		max_inputs:       2
		target:           "act1"
		request:          "{urls: .inputs, opts: .options, max: .limit}"
		normalize:        "\"a\" as $src | " + _norm
		implements: ["deep"]
	}, {
		offer:            "source_b/pro_net"
		price_per_record: 0.001725
		max_inputs:       20
		target:           "ds1"
		request:          "{input: [.inputs[] | {url: .}], opts: .options, max: .limit}"
		normalize:        "\"b\" as $src | " + _norm
		implements: ["deep", "lang"]
	}, {
		offer:            "source_a/actor_9"
		price_per_record: 0.001
		max_inputs:       1
		target:           "act9"
		status:           "coming_soon"
	}]
}

services: "pro_net/post.list": {
	platform:    "pro_net"
	service:     "post.list"
	description: "Posts of a profile."
	input_kind:  "url"
	accepts:     _accepts
	limit_scope: "per_input"
	record:      "#R"
	offers: [{
		offer:            "source_a/actor_2"
		price_per_record: 0.001
		max_inputs:       5
		target:           "act2"
		request:          "{urls: .inputs, max: .limit}"
		normalize:        "\"a\" as $src | " + _norm
	}]
}

services: "photo_net/post.info": {
	platform:    "photo_net"
	service:     "post.info"
	description: "A post."
	input_kind:  "url"
	accepts:     _accepts
	record:      "#R"
	offers: [{
		offer:            "source_b/photo_net"
		price_per_record: 0.001
		max_inputs:       10
		target:           "ds2"
		normalize:        "{name: (.raw | tostring)}"
	}]
}
`

// testRegistry compiles testCUE once per test.
func testRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg, err := registry.LoadFiles(map[string][]byte{"services/x.cue": []byte(testCUE)})
	if err != nil {
		t.Fatalf("loading test registry: %v", err)
	}
	return reg
}

// service returns a service of the test registry.
func service(t *testing.T, reg *registry.Registry, key string) *registry.Service {
	t.Helper()
	for _, s := range reg.Services {
		if s.Key == key {
			return s
		}
	}
	t.Fatalf("no service %s", key)
	return nil
}

// offer returns an offer of a service.
func offer(t *testing.T, s *registry.Service, id string) *registry.Offer {
	t.Helper()
	o, ok := s.Offer(id)
	if !ok {
		t.Fatalf("no offer %s in %s", id, s.Key)
	}
	return o
}

// fake is an in-package sources.Client: do decides each call's answer. It
// records the calls and the largest number of calls in flight at once.
type fake struct {
	do func(ctx context.Context, c sources.Call) (*sources.Result, error)

	mu          sync.Mutex
	calls       []sources.Call
	inflight    int
	maxInflight int
}

func (f *fake) Do(ctx context.Context, c sources.Call) (*sources.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.inflight++
	f.maxInflight = max(f.maxInflight, f.inflight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	if f.do == nil {
		return echo(1)(ctx, c)
	}
	return f.do(ctx, c)
}

// Calls returns a copy of the recorded calls.
func (f *fake) Calls() []sources.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sources.Call(nil), f.calls...)
}

// bodyInputs extracts the inputs from a body built by one of the test
// request programs (or the default {"inputs": [...]}).
func bodyInputs(body any) []string {
	m, _ := body.(map[string]any)
	var out []string
	for _, key := range []string{"urls", "inputs", "input"} {
		list, _ := m[key].([]any)
		for _, x := range list {
			switch v := x.(type) {
			case string:
				out = append(out, v)
			case map[string]any:
				s, _ := v["url"].(string)
				out = append(out, s)
			}
		}
	}
	return out
}

// echo answers n items per input, each naming its input in "url" and its
// rank in "name" ("<input>#<k>").
func echo(n int) func(context.Context, sources.Call) (*sources.Result, error) {
	return func(_ context.Context, c sources.Call) (*sources.Result, error) {
		res := &sources.Result{Status: 201, Handles: []string{"run_" + c.Target}}
		for _, in := range bodyInputs(c.Body) {
			for k := range n {
				res.Items = append(res.Items, rawf(`{"url": %q, "name": "%s#%d"}`, in, in, k))
			}
		}
		return res, nil
	}
}

// fail answers every call with err.
func fail(err *sources.Error) func(context.Context, sources.Call) (*sources.Result, error) {
	return func(context.Context, sources.Call) (*sources.Result, error) { return nil, err }
}

// jsonRaw shortens json.RawMessage in test tables.
type jsonRaw = json.RawMessage

// rawf formats one raw JSON item.
func rawf(format string, args ...any) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(format, args...))
}

// field reads a string field of a JSON record.
func field(t *testing.T, rec json.RawMessage, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec, &m); err != nil {
		t.Fatalf("record %s: %v", rec, err)
	}
	s, _ := m[name].(string)
	return s
}

// names returns the "name" field of every record.
func names(t *testing.T, recs []json.RawMessage) []string {
	t.Helper()
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = field(t, r, "name")
	}
	return out
}

// outcomes returns "<offer>:<outcome>" for every attempt.
func outcomes(as []runs.Attempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Offer + ":" + a.Outcome
	}
	return out
}

// clock is an injectable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// asFailure asserts err is a *Failure.
func asFailure(t *testing.T, err error) *Failure {
	t.Helper()
	f, ok := err.(*Failure)
	if !ok {
		t.Fatalf("error %v (%T) is not a *Failure", err, err)
	}
	return f
}
