package sources

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// step is one scripted upstream answer: the endpoint it must be asked on
// (trigger, progress, snapshot) and what it answers.
type step struct {
	endpoint string
	status   int
	body     string
}

// scripted serves steps in order, recording the endpoints asked; a
// request out of the script fails the test.
type scripted struct {
	t     *testing.T
	mu    sync.Mutex
	steps []step
	asked []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ep := strings.Split(strings.TrimPrefix(r.URL.Path, "/datasets/v3/"), "/")[0]
	s.asked = append(s.asked, ep)
	if len(s.steps) == 0 || s.steps[0].endpoint != ep {
		s.t.Errorf("asked %s %s out of the script (left: %v)", r.Method, r.URL.Path, s.steps)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(st.status)
	_, _ = w.Write([]byte(st.body))
}

// TestSnapshotFirstCheckDownloads: the first check of a snapshot started
// without a notify is a download. Rows there end the wait (trigger and
// download, no progress poll); any other answer (not ready, unknown yet,
// empty, failed, a 5xx) leaves the wait to the progress polls, as if it
// had been one, and counts as no poll failure.
func TestSnapshotFirstCheckDownloads(t *testing.T) {
	const (
		rows     = `[{"id":"1","url":"u"},{"id":"2","url":"u"}]`
		notReady = `{"status":"running","message":"Snapshot is not ready yet, try again in 10s"}`
	)
	trigger := step{"trigger", 200, `{"snapshot_id":"s_1"}`}
	tests := []struct {
		name      string
		steps     []step
		wantItems int
		wantErr   string // the error's outcome; "" for none
	}{
		{"ready at the first check: one download, no progress poll",
			[]step{trigger, {"snapshot", 200, rows}}, 2, ""},
		{"not ready (202): progress polls, then the download",
			[]step{trigger, {"snapshot", 202, notReady}, {"progress", 200, `{"status":"running"}`},
				{"progress", 200, `{"status":"ready"}`}, {"snapshot", 200, rows}}, 2, ""},
		{"not ready as a 200 status body",
			[]step{trigger, {"snapshot", 200, notReady}, {"progress", 200, `{"status":"ready"}`}, {"snapshot", 200, rows}}, 2, ""},
		{"unknown yet (404)",
			[]step{trigger, {"snapshot", 404, `{"error":"Snapshot does not exist"}`}, {"progress", 200, `{"status":"ready"}`},
				{"snapshot", 200, rows}}, 2, ""},
		{"empty is read again once progress says ready",
			[]step{trigger, {"snapshot", 400, `{"error":"Snapshot is empty"}`}, {"progress", 200, `{"status":"ready"}`},
				{"snapshot", 400, `{"error":"Snapshot is empty"}`}}, 0, ""},
		{"an empty array at the first check is read again once ready",
			[]step{trigger, {"snapshot", 200, `[]`}, {"progress", 200, `{"status":"ready"}`}, {"snapshot", 200, rows}}, 2, ""},
		{"failed: the progress poll says so",
			[]step{trigger, {"snapshot", 400, `{"error":"Snapshot failed"}`}, {"progress", 200, `{"status":"failed"}`}}, 0, OutcomeSnapshot},
		{"a 5xx at the first check is no poll failure",
			[]step{trigger, {"snapshot", 503, `{}`}, {"progress", 503, `{}`}, {"progress", 503, `{}`}, {"progress", 503, `{}`},
				{"progress", 200, `{"status":"ready"}`}, {"snapshot", 200, rows}}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{t: t, steps: tc.steps}
			srv := httptest.NewServer(s)
			defer srv.Close()
			c, err := NewDatasetScrape(Config{BaseURL: srv.URL, PollInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			var rec recorder
			res, err := c.Do(t.Context(), rec.call(Call{Target: companyTarget, Params: map[string]string{"type": "discover_new"},
				Body: map[string]any{"input": []any{map[string]any{"url": "u"}}}}))
			var e *Error
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v, want %d items", err, tc.wantItems)
			case tc.wantErr != "" && (!errors.As(err, &e) || e.Outcome != tc.wantErr):
				t.Fatalf("got %v, want an error of outcome %s", err, tc.wantErr)
			case tc.wantErr == "" && len(res.Items) != tc.wantItems:
				t.Errorf("%d items, want %d", len(res.Items), tc.wantItems)
			}
			if len(s.steps) != 0 {
				t.Errorf("asked %v; the script's %v were not asked", s.asked, s.steps)
			}
			if len(rec.handles) != 1 || rec.handles[0].SnapshotID != "s_1" {
				t.Errorf("handles %v, want the snapshot reported", rec.handles)
			}
		})
	}
}

// TestEarlyRowsEmptyKeepsTheBuffer: an empty array at the first check
// hands the answer back to its caller, whose release is the one return of
// its pooled buffer: a second would give the buffer to two later calls.
func TestEarlyRowsEmptyKeepsTheBuffer(t *testing.T) {
	buf := bodyBufs.Get(8)
	*buf = append((*buf)[:0], "[]"...)
	ans := &answer{status: 200, body: *buf, buf: buf}
	if res, ok := earlyRows(ans); ok || res != nil {
		t.Fatalf("earlyRows of [] = %v, %v; want nothing", res, ok)
	}
	if ans.buf != buf {
		t.Fatal("earlyRows took the answer's buffer")
	}
	ans.release()
	a, b := bodyBufs.Get(8), bodyBufs.Get(8)
	if a == b {
		t.Fatal("the buffer was returned to the pool twice")
	}
}
