package router

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"socialrouter/caddymodule/normalize"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

// TestBuildBodyDropsTopLevelNulls: a request program's top-level nulls
// (an option the caller left out) are not sent; nested ones are the
// program's to keep.
func TestBuildBodyDropsTopLevelNulls(t *testing.T) {
	for _, tc := range []struct {
		name, program string
		opts          map[string]any
		want          string
	}{
		{"option left out", `{profileUrls: .inputs, includeEmail: .options.includeEmail}`, nil, `{"profileUrls":["u"]}`},
		{"option given", `{profileUrls: .inputs, includeEmail: .options.includeEmail}`, map[string]any{"includeEmail": false}, `{"includeEmail":false,"profileUrls":["u"]}`},
		{"nested null kept", `{input: [{url: .inputs[0], sort: .options.sort}]}`, nil, `{"input":[{"sort":null,"url":"u"}]}`},
		{"not an object", `[.inputs[] | {url: .}]`, nil, `[{"url":"u"}]`},
		{"constant object", `{fixed: true, unused: null}`, nil, `{"fixed":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := normalize.Compile(tc.program)
			if err != nil {
				t.Fatal(err)
			}
			body, err := buildBody(t.Context(), &registry.Offer{ID: "o", Request: p}, []string{"u"}, tc.opts, 1, "now")
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(body); string(got) != tc.want {
				t.Errorf("body %s, want %s", got, tc.want)
			}
			// The program's own output is left as it was: gojq shares the
			// map of a constant object among runs.
			again, _ := p.Run(t.Context(), map[string]any{"inputs": []any{"u"}, "options": tc.opts, "limit": 1}, "", "now")
			if got, _ := json.Marshal(again[0]); tc.name == "constant object" && string(got) != `{"fixed":true,"unused":null}` {
				t.Errorf("the program's constant became %s", got)
			}
		})
	}
}

// TestRunRecordOffSchema: a record off the service's record schema is
// neither served nor billed, is logged with offer, field and reason, and
// counts as a failed item; an attempt with no surviving item fails and the
// walk moves on.
func TestRunRecordOffSchema(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	items := func(bodies ...string) func(context.Context, sources.Call) (*sources.Result, error) {
		return func(context.Context, sources.Call) (*sources.Result, error) {
			res := &sources.Result{Status: 200}
			for _, b := range bodies {
				res.Items = append(res.Items, rawf(`{"url": %q, %s}`, in1, b))
			}
			return res, nil
		}
	}
	tests := []struct {
		name     string
		head     func(context.Context, sources.Call) (*sources.Result, error)
		outcomes []string
		names    []string
		message  string // in the head attempt's message
		logged   int    // warnings naming the field "name"
	}{
		{"every record off its schema", items(`"name": 7`, `"name": ["x"]`),
			[]string{headID + ":" + OutcomeNoValidRecords, secondID + ":ok"}, []string{in1 + "#0"},
			"2 off the record schema: name: want string, got the number 7", 2},
		{"every item fails its normalizer", items(`"bad": true`, `"bad": true`),
			[]string{headID + ":" + OutcomeNoValidRecords, secondID + ":ok"}, []string{in1 + "#0"},
			"2 failed normalize: error: bad item", 0},
		{"a failure beside an off-schema record", items(`"bad": true`, `"name": 7`),
			[]string{headID + ":" + OutcomeNoValidRecords, secondID + ":ok"}, []string{in1 + "#0"},
			"1 failed normalize: error: bad item; 1 off the record schema", 1},
		{"every item dropped by the normalizer", items(`"skip": true`, `"skip": true`),
			[]string{headID + ":" + OutcomeNoValidRecords, secondID + ":ok"}, []string{in1 + "#0"},
			"2 dropped by the normalizer", 0},
		{"error rows and dropped items, no record", items(`"error": "gone", "error_code": "dead_page"`, `"skip": true`),
			[]string{headID + ":" + OutcomeNoValidRecords, secondID + ":ok"}, []string{in1 + "#0"},
			"1 dropped by the normalizer", 0},
		{"one record off its schema among good ones", items(`"name": "ok1"`, `"name": 7`, `"name": "ok2"`),
			[]string{headID + ":ok"}, []string{"ok1", "ok2"},
			"1 records off the record schema dropped: name: want string, got the number 7", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.WarnLevel)
			a, b := &fake{do: tt.head}, &fake{}
			obs := &recorder{}
			r := New(Config{Observer: obs}, map[string]sources.Client{"source_a": a, "source_b": b}, NewBreakers(), zap.New(core))
			res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Limit: 10})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := outcomes(res.Attempts); !reflect.DeepEqual(got, tt.outcomes) {
				t.Fatalf("attempts %v, want %v", got, tt.outcomes)
			}
			if got := names(t, res.Records); !reflect.DeepEqual(got, tt.names) {
				t.Errorf("records %v, want %v", got, tt.names)
			}
			served := res.Attempts[len(res.Attempts)-1]
			if served.Records != len(tt.names) {
				t.Errorf("the serving attempt bills %d records, want %d", served.Records, len(tt.names))
			}
			if !strings.Contains(res.Attempts[0].Message, tt.message) {
				t.Errorf("head message %q, want it to contain %q", res.Attempts[0].Message, tt.message)
			}
			warned := logs.FilterMessage("record off its declared schema dropped").FilterField(zap.String("field", "name")).
				FilterField(zap.String("offer", headID)).All()
			if len(warned) != tt.logged {
				t.Errorf("%d warnings for the field, want %d: %v", len(warned), tt.logged, logs.All())
			}
			if got := obs.refused[headID]; got != tt.logged {
				t.Errorf("observer told of %d refused records, want %d", got, tt.logged)
			}
			for _, w := range warned {
				if !strings.HasPrefix(w.ContextMap()["reason"].(string), "want string") {
					t.Errorf("warning reason %v", w.ContextMap()["reason"])
				}
			}
		})
	}
}
