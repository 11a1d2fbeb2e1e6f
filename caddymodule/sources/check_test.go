package sources

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestCheck: one status call, no wait; ended unless the upstream says the
// work still runs, a 404 ended, a 5xx an error.
func TestCheck(t *testing.T) {
	answers := map[string]struct {
		status int
		body   string
	}{
		"/v2/actor-runs/r1":        {200, `{"data":{"id":"r1","status":"RUNNING"}}`},
		"/v2/actor-runs/r2":        {200, `{"data":{"id":"r2","status":"SUCCEEDED"}}`},
		"/v2/actor-runs/r3":        {404, `{"error":{"type":"record-not-found"}}`},
		"/v2/actor-runs/r4":        {503, `{}`},
		"/datasets/v3/progress/s1": {200, `{"status":"running"}`},
		"/datasets/v3/progress/s2": {200, `{"status":"ready"}`},
		"/datasets/v3/progress/s3": {200, `{"status":"failed"}`},
		"/datasets/v3/progress/s4": {200, `{}`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("waitForFinish") {
			t.Errorf("a check waits: %s", r.URL)
		}
		a, ok := answers[r.URL.Path]
		if !ok {
			a.status = 500
		}
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	defer srv.Close()
	ar, err := NewActorRun(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := NewDatasetScrape(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ck      Checker
		h       Handle
		ended   bool
		wantErr bool
	}{
		{ar, Handle{Protocol: ProtocolActorRun, RunID: "r1", DatasetID: "d"}, false, false},
		{ar, Handle{Protocol: ProtocolActorRun, RunID: "r2", DatasetID: "d"}, true, false},
		{ar, Handle{Protocol: ProtocolActorRun, RunID: "r3", DatasetID: "d"}, true, false},
		{ar, Handle{Protocol: ProtocolActorRun, RunID: "r4", DatasetID: "d"}, false, true},
		{ds, Handle{Protocol: ProtocolDatasetScrape, SnapshotID: "s1"}, false, false},
		{ds, Handle{Protocol: ProtocolDatasetScrape, SnapshotID: "s2"}, true, false},
		{ds, Handle{Protocol: ProtocolDatasetScrape, SnapshotID: "s3"}, true, false},
		{ds, Handle{Protocol: ProtocolDatasetScrape, SnapshotID: "s4"}, false, true},
	} {
		ended, err := c.ck.Check(t.Context(), c.h)
		if ended != c.ended || (err != nil) != c.wantErr {
			t.Errorf("Check(%s) = %v, %v; want ended %v, error %v", c.h, ended, err, c.ended, c.wantErr)
		}
	}
}
