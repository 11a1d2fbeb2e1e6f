package sim

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"
)

func TestSetInput(t *testing.T) {
	tests := []struct{ item, input, want string }{
		{`{"a":1}`, `{"url":"u"}`, `{"input":{"url":"u"},"a":1}`},
		{`{}`, `{"url":"u"}`, `{"input":{"url":"u"}}`},
		{`{"a":1,"input":{"url":"old"},"b":2}`, `{"url":"u"}`, `{"a":1,"input":{"url":"u"},"b":2}`},
		{`{"input":"x"}`, `[1]`, `{"input":[1]}`},
	}
	for _, tc := range tests {
		got := string(setInput([]byte(tc.item), []byte(tc.input)))
		if got != tc.want || !json.Valid([]byte(got)) {
			t.Errorf("setInput(%s, %s) = %s, want %s", tc.item, tc.input, got, tc.want)
		}
	}
}

func TestCustomFixturesAndRoutes(t *testing.T) {
	fsys := fstest.MapFS{
		"routes.json":   {Data: []byte(`{"my~actor": "mine.json"}`)},
		"mine.json":     {Data: []byte(`[{"id": 1}, {"id": 2, "error": "x"}, {"id": 3}]`)},
		"bad.json":      {Data: []byte(`{"not": "an array"}`)},
		"errsonly.json": {Data: []byte(`[{"error": "x"}]`)},
	}
	s, srv := start(t, Options{Fixtures: fsys, Routes: map[string]string{"other~actor": "mine.json"}})
	for _, target := range []string{"my~actor", "other~actor"} {
		st, body := post(t, srv.URL+"/v2/acts/"+target+"/run-sync-get-dataset-items", `{}`)
		if st != 201 || body != `[{"id":1},{"id":3},{"id":2,"error":"x"}]` {
			t.Errorf("%s: %d %s, want the data items, then the example's error row", target, st, body)
		}
	}
	// The directory adds to the examples: the declared routes still answer.
	if err := s.Check(); err != nil {
		t.Errorf("Check() = %v, want the declared examples still found", err)
	}
	if st, body := post(t, srv.URL+"/v2/acts/"+actorTarget+"/run-sync-get-dataset-items", `{}`); st != 201 || !strings.HasPrefix(body, "[{") {
		t.Errorf("declared route %s: %d %s", actorTarget, st, body)
	}
	for _, path := range []string{"bad.json", "missing.json"} {
		if _, err := s.fixture(path); err == nil {
			t.Errorf("fixture(%s) loaded", path)
		}
	}
	// An example of error rows only is served: its rows are the answer.
	if fx, err := s.fixture("errsonly.json"); err != nil || len(fx.errs) != 1 {
		t.Errorf("fixture(errsonly.json): %v", err)
	}
}
