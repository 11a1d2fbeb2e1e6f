package settle

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// TestExpireDoc: the expired document keeps every member but the records,
// says it expired and when, is served in its API form by RunAPIJSON, and
// expiring it again changes nothing.
func TestExpireDoc(t *testing.T) {
	at := time.Date(2026, 4, 1, 2, 3, 4, 5678, time.UTC)
	run := &runs.Run{ID: "ext_1", Status: runs.StatusCompleted, Service: "profile.info", ServedBy: "source_b/pro_net",
		URL: "https://e.com/a", CreatedAt: at.Add(-40 * 24 * time.Hour), CompletedAt: at.Add(-40 * 24 * time.Hour),
		Data:      []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`)},
		AccountID: "acme", KeyID: "key_1", Attempts: []runs.Attempt{{Offer: "source_b/pro_net", Outcome: "ok", Records: 2}}}
	p, err := Prepare(store.Settlement{Run: run, Price: 1725})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := p.Doc(2, 3450)
	exp, already, err := ExpireDoc(doc, at)
	if err != nil || already {
		t.Fatalf("ExpireDoc: %v (already %v)", err, already)
	}
	got, err := DecodeRun(exp)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := DecodeRun(doc)
	want.Data = []json.RawMessage{}
	want.RecordsExpired = true
	wantAt := Time(at)
	want.ExpiredAt = &wantAt
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) || got.AccountID != "acme" || got.KeyID != "key_1" {
		t.Errorf("expired run\n got %s\nwant %s", gb, wb)
	}
	if got.CreditsUsed != 3450 || got.Pagination.Returned != 2 {
		t.Errorf("billing facts changed: credits_used %d, returned %d", got.CreditsUsed, got.Pagination.Returned)
	}
	api, err := RunAPIJSON(append([]byte(nil), exp...))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"data":[]`, `"records_expired":true`, `"expired_at":"2026-04-01T02:03:04.000005Z"`} {
		if !strings.Contains(string(api), s) {
			t.Errorf("API form %s lacks %s", api, s)
		}
	}
	if strings.Contains(string(api), "account_id") {
		t.Errorf("API form %s keeps the scope", api)
	}
	if again, already, err := ExpireDoc(exp, at.Add(time.Hour)); err != nil || !already || again != nil {
		t.Errorf("second ExpireDoc = %s, %v, %v; want nothing to do", again, already, err)
	}
}
