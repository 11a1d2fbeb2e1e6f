package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"socialrouter/caddymodule/sources"
)

func TestScrapeRecordsEchoInputs(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		items int
		// kinds per record: d = data, e = error record
		kinds string
	}{
		{name: "data only", kinds: "dddd"},
		{name: "error records on odd inputs", fault: Fault{ErrorRecords: true}, kinds: "dede"},
		{name: "all errors", fault: Fault{AllErrors: true}, kinds: "eeee"},
		{name: "records per input", items: 2, kinds: "dddddddd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, srv := start(t, Options{Items: tc.items})
			tc.fault.Target = companyTarget
			_ = s.SetFault(tc.fault)
			b, _ := json.Marshal(scrapeBody(4))
			status, body := post(t, srv.URL+"/datasets/v3/scrape?dataset_id="+companyTarget+"&format=json&include_errors=true", string(b))
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			recs := gjson.Parse(body).Array()
			if len(recs) != len(tc.kinds) {
				t.Fatalf("%d records, want %d", len(recs), len(tc.kinds))
			}
			per := len(tc.kinds) / 4
			names := map[string]bool{}
			for i, r := range recs {
				in := i / per
				if got := r.Get("input.tag").Int(); got != int64(in) {
					t.Errorf("record %d echoes input %d, want %d", i, got, in)
				}
				isErr := r.Get("error_code").Exists()
				if isErr != (tc.kinds[i] == 'e') {
					t.Errorf("record %d error=%v, want kind %c: %s", i, isErr, tc.kinds[i], r.Raw)
				}
				if !isErr {
					names[r.Get("name").String()] = true
				}
			}
			if !strings.Contains(tc.kinds, "e") && len(names) != 2 {
				t.Errorf("data records should cycle through both fixture items, got %v", names)
			}
		})
	}
}

func TestScrapeUsesFixtureErrorTemplate(t *testing.T) {
	s, srv := start(t, Options{})
	_ = s.SetFault(Fault{Target: datasetTarget, ErrorRecords: true})
	res, err := client(t, sources.ProtocolDatasetScrape, srv.URL, "").Do(context.Background(),
		sources.Call{Target: datasetTarget, Body: scrapeBody(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 2 || res.ErrorItems != 1 {
		t.Fatalf("%d items, %d errors", len(res.Items), res.ErrorItems)
	}
	e := gjson.ParseBytes(res.Items[1])
	if e.Get("error").String() != "Event not found or not public" || e.Get("input.tag").Int() != 1 {
		t.Errorf("error record %s: want the fixture's record echoing input 1", res.Items[1])
	}
}

func TestAsyncSnapshotEndToEnd(t *testing.T) {
	s, srv := start(t, Options{Token: "sim-token"})
	_ = s.SetFault(Fault{Target: companyTarget, Async: true, Polls: 3, ErrorRecords: true})
	var activity atomic.Int32
	res, err := client(t, sources.ProtocolDatasetScrape, srv.URL, "sim-token").Do(context.Background(),
		sources.Call{Target: companyTarget, Body: scrapeBody(45), Activity: func() { activity.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 45 || res.ErrorItems != 22 {
		t.Fatalf("%d items, %d errors; want 45 and 22 (odd inputs)", len(res.Items), res.ErrorItems)
	}
	for i, it := range res.Items {
		if gjson.GetBytes(it, "input.tag").Int() != int64(i) {
			t.Fatalf("item %d out of input order: %s", i, it)
		}
	}
	// More than 20 inputs go to /trigger: one snapshot.
	if len(res.Handles) != 1 || !strings.HasPrefix(res.Handles[0], "snapshot:s_") {
		t.Errorf("handles %v, want one snapshot", res.Handles)
	}
	calls := s.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls logged, want one trigger", len(calls))
	}
	for _, c := range calls {
		if c.Status != http.StatusOK || c.Protocol != ProtocolDatasetScrape || c.Query["include_errors"] != "true" {
			t.Errorf("call %+v", c)
		}
	}
	if activity.Load() < 9 {
		t.Errorf("activity %d: want at least one per poll answer", activity.Load())
	}
}

func TestSnapshotEndpoints(t *testing.T) {
	s, srv := start(t, Options{})
	_ = s.SetFault(Fault{Target: datasetTarget, Async: true, Polls: 3})
	st, body := post(t, srv.URL+"/datasets/v3/scrape?dataset_id="+datasetTarget, string(must(json.Marshal(scrapeBody(1)))))
	id := gjson.Get(body, "snapshot_id").String()
	if st != 202 || !strings.HasPrefix(id, "s_") {
		t.Fatalf("got %d %s", st, body)
	}
	get := func(path string) (int, string) { return request(t, http.MethodGet, srv.URL+path, "") }
	steps := []struct {
		path   string
		status int
		field  string
	}{
		{"/datasets/v3/progress/" + id, 200, "starting"},
		{"/datasets/v3/snapshot/" + id + "?format=json", 202, "running"},
		{"/datasets/v3/progress/" + id, 200, "ready"},
		{"/datasets/v3/snapshot/" + id + "?format=json", 200, ""},
		{"/datasets/v3/progress/s_unknown", 404, ""},
		{"/datasets/v3/snapshot/s_unknown", 404, ""},
	}
	for _, step := range steps {
		st, body := get(step.path)
		if st != step.status || (step.field != "" && gjson.Get(body, "status").String() != step.field) {
			t.Errorf("GET %s = %d %s, want %d %s", step.path, st, body, step.status, step.field)
		}
	}
}
