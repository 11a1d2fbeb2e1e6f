package runs

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestAppendJSON checks that splicing the records into the header gives
// the same JSON value as json.Marshal of the whole run, whatever the
// records and header strings hold, and that a head with no data member is
// refused rather than answered without its records.
func TestAppendJSON(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 2, 3, 4, time.UTC)
	runs := []Run{
		{ID: "ext_1", Status: "completed", URL: "https://e.com/?a=<b>&c", CreatedAt: now, Data: []json.RawMessage{}},
		{ID: "ext_2", Status: "completed", URL: `x","data":null,"y`, Data: []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"s":",\"data\":null,"}`)}},
		{ID: "ext_3", Status: "failed", Error: &RunError{Code: "c", Type: "t", Message: `,"data":null,`}, Attempts: []Attempt{{}}},
		{ID: "ext_4", Kind: "search", Queries: []string{"q"}, Data: []json.RawMessage{json.RawMessage(`[1,2]`), json.RawMessage(`"\u2028"`)}},
	}
	for _, run := range runs {
		t.Run(run.ID, func(t *testing.T) {
			head := run
			head.Data = nil
			got, err := AppendJSON([]byte("prefix:"), &head, run.Data)
			if err != nil {
				t.Fatal(err)
			}
			if string(got[:7]) != "prefix:" {
				t.Fatalf("dst not appended to: %s", got)
			}
			full := run
			if full.Data == nil {
				full.Data = []json.RawMessage{}
			}
			want, _ := json.Marshal(&full)
			var g, w any
			if err := json.Unmarshal(got[7:], &g); err != nil {
				t.Fatalf("invalid JSON %s: %v", got[7:], err)
			}
			_ = json.Unmarshal(want, &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", got[7:], want)
			}
		})
	}
	if _, err := AppendJSON(nil, struct{ ID string }{"x"}, nil); err == nil {
		t.Error("a head without a data member was accepted")
	}
}
