package sim

import (
	"testing"
	"testing/fstest"

	"github.com/tidwall/gjson"
)

// TestScrapeServesTheExampleRows: with no item count set, a scrape answers
// each input with the example's rows that answer it: every row of an
// example about one input (the three comments of one post), the rows (or
// the error row) whose own input it names, one row in turn of an example
// about several inputs, and the rows of an example of error rows only.
func TestScrapeServesTheExampleRows(t *testing.T) {
	fsys := fstest.MapFS{
		"comments.json": {Data: []byte(`[{"input": {"url": "p"}, "c": 1}, {"input": {"url": "p"}, "c": 2}, {"input": {"url": "p"}, "c": 3}]`)},
		"companies.json": {Data: []byte(`[{"input": {"url": "a"}, "c": "A"}, {"input": {"url": "b"}, "c": "B"},
			{"input": {"url": "gone"}, "error": "not found", "error_code": "dead_page"}]`)},
		"errors.json": {Data: []byte(`[{"error": "private account", "error_code": "private"}]`)},
	}
	_, srv := start(t, Options{Fixtures: fsys, Routes: map[string]string{"gd_c": "comments.json", "gd_co": "companies.json", "gd_e": "errors.json"}})
	for _, tc := range []struct{ name, target, inputs, want string }{
		{"every row of one input's example", "gd_c", `[{"url": "x"}]`, "x:1 x:2 x:3"},
		{"the rows whose input it names", "gd_co", `[{"url": "b"}, {"url": "a"}]`, "b:B a:A"},
		{"the error row whose input it names", "gd_co", `[{"url": "gone"}]`, "gone:error"},
		{"one row in turn of several inputs' example", "gd_co", `[{"url": "x"}, {"url": "y"}]`, "x:A y:B"},
		{"error rows only", "gd_e", `[{"url": "x"}]`, "x:error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := post(t, srv.URL+"/datasets/v3/scrape?dataset_id="+tc.target+"&format=json&include_errors=true", `{"input": `+tc.inputs+`}`)
			if st != 200 {
				t.Fatalf("%d %s", st, body)
			}
			got := ""
			for _, r := range gjson.Parse(body).Array() {
				v := r.Get("c").String()
				if r.Get("error").Exists() {
					v = "error"
				}
				if got != "" {
					got += " "
				}
				got += r.Get("input.url").String() + ":" + v
			}
			if got != tc.want {
				t.Errorf("rows %s, want %s", got, tc.want)
			}
		})
	}
}

// TestFaultsEmitTheSourcesErrorRows: all_errors on an actor emits the
// actor's own error rows (the example's, else an {"error",
// "errorDescription"} row without error_code), never the datasets'
// dead_page row.
func TestFaultsEmitTheSourcesErrorRows(t *testing.T) {
	fsys := fstest.MapFS{
		"plain.json": {Data: []byte(`[{"id": 1}]`)},
		"own.json":   {Data: []byte(`[{"id": 1}, {"error": "Profile not found", "errorDescription": "gone"}]`)},
	}
	s, srv := start(t, Options{Fixtures: fsys, Routes: map[string]string{"a~plain": "plain.json", "a~own": "own.json"}})
	for target, want := range map[string]string{"a~plain": actorErrorText, "a~own": "Profile not found"} {
		if err := s.SetFault(Fault{Target: target, AllErrors: true}); err != nil {
			t.Fatal(err)
		}
		st, body := post(t, srv.URL+"/v2/acts/"+target+"/run-sync-get-dataset-items", `{}`)
		rows := gjson.Parse(body).Array()
		if st != 201 || len(rows) == 0 {
			t.Fatalf("%s: %d %s", target, st, body)
		}
		for _, r := range rows {
			if r.Get("error").String() != want || r.Get("error_code").Exists() {
				t.Errorf("%s: row %s, want the actor's error row %q", target, r.Raw, want)
			}
		}
	}
}
