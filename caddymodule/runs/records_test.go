package runs

import (
	"encoding/json"
	"testing"
	"time"
)

// TestRecords: the records read out of a run's JSON are the bytes its
// encoder wrote, in order, for the API form and the stored (scoped) one.
func TestRecords(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		data []json.RawMessage
	}{
		{"none", []json.RawMessage{}},
		{"one", []json.RawMessage{json.RawMessage(`{"a":1}`)}},
		{"nested and tricky strings", []json.RawMessage{
			json.RawMessage(`{"s":"],\"data\":[1]","n":[1,[2,{"x":"}"}]]}`),
			json.RawMessage(`{"u":"\u00e9\\"}`),
			json.RawMessage(`{}`),
		}},
	}
	for _, tc := range cases {
		run := &Run{ID: "ext_1", Status: StatusCompleted, Platform: "p", Service: "s", URL: `https://x/?q="data"`,
			CreatedAt: at, CompletedAt: at, Attempts: []Attempt{{Offer: "o", Outcome: "ok", Message: `"data":[`}}}
		for _, scoped := range []bool{false, true} {
			doc, ok := AppendRun(nil, run, tc.data, scoped, "acct", "key")
			if !ok {
				t.Fatal("AppendRun refused the run")
			}
			got, ok := Records(doc)
			if !ok || len(got) != len(tc.data) {
				t.Fatalf("%s (scoped %v): Records = %d records, %v; want %d", tc.name, scoped, len(got), ok, len(tc.data))
			}
			for i := range got {
				if string(got[i]) != string(tc.data[i]) {
					t.Errorf("%s: record %d = %s, want %s", tc.name, i, got[i], tc.data[i])
				}
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"id":"x"}`, `{"data":null}`, `{"data":{}}`} {
		if recs, ok := Records([]byte(bad)); ok {
			t.Errorf("Records(%q) = %q, true; want not ok", bad, recs)
		}
	}
}
