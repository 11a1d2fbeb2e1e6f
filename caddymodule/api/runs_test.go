package api

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// TestGetRun: a run is served as stored to its account's keys, and any
// other id is a 404 not_found.
func TestGetRun(t *testing.T) {
	a := newTestAPI(t, 5)
	now := time.Now().UTC()
	run := &runs.Run{ID: "ext_1", Status: runs.StatusCompleted, Platform: "pro_net", AccountID: "acme", KeyID: a.key.ID,
		Data: []json.RawMessage{json.RawMessage(`{"n":1}`)}, CreatedAt: now, CompletedAt: now}
	if _, err := a.store.Settle(t.Context(), store.Settlement{Run: run, Price: 1, Offer: "o", Platform: "pro_net", Now: now}); err != nil {
		t.Fatal(err)
	}
	res, _ := a.do(t, "GET", "/v1/extractions/ext_1", "", true)
	b, _ := io.ReadAll(res.Body)
	var got runs.Run
	if res.StatusCode != 200 || json.Unmarshal(b, &got) != nil || got.ID != "ext_1" || len(got.Data) != 1 || got.CreditsUsed != 1 {
		t.Errorf("stored run: %d %s", res.StatusCode, b)
	}
	for _, id := range []string{"ext_2", "run_1"} {
		res, e := a.do(t, "GET", "/v1/extractions/"+id, "", true)
		if res.StatusCode != 404 || e.Code != "not_found" || e.Message != `no run "`+id+`" in this account` {
			t.Errorf("%s: %d %+v", id, res.StatusCode, e)
		}
	}
}
