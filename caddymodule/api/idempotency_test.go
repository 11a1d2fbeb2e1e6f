package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

func TestIdempotencyKeyHeader(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   string
		bad    bool
	}{
		{"absent", nil, "", false},
		{"structured string", []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, "8e03978e-40d5-43e8-bc93-6894a57f9324", false},
		{"bare token", []string{"order-42"}, "order-42", false},
		{"spaces around", []string{`  "k 1"  `}, "k 1", false},
		{"empty", []string{`""`}, "", true},
		{"too long", []string{strings.Repeat("x", 256)}, "", true},
		{"longest", []string{strings.Repeat("x", 255)}, strings.Repeat("x", 255), false},
		{"twice", []string{"a", "b"}, "", true},
		{"control character", []string{"a\tb"}, "", true},
		{"non-ASCII", []string{"clé"}, "", true},
		{"inner quote", []string{`"a"b"`}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.values {
				h.Add("Idempotency-Key", v)
			}
			got, apiErr := idempotencyKey(h)
			if tt.bad != (apiErr != nil) || got != tt.want {
				t.Errorf("idempotencyKey(%q) = %q, %v; want %q, bad %v", tt.values, got, apiErr, tt.want, tt.bad)
			}
			if apiErr != nil && (apiErr.Status != 400 || apiErr.Code != "invalid_idempotency_key") {
				t.Errorf("error %d %s", apiErr.Status, apiErr.Code)
			}
		})
	}
}

// TestFingerprint: the same request whatever its whitespace and key
// order; another body, service or kind is another request.
func TestFingerprint(t *testing.T) {
	reg := loadRegistry(t)
	svc, _ := reg.Service("forum_net", "subreddit.posts")
	other, _ := reg.Service("pro_net", "profile.info")
	body := func(s string) map[string]json.RawMessage {
		m, apiErr := parseObject([]byte(s))
		if apiErr != nil {
			t.Fatal(apiErr)
		}
		return m
	}
	ex := &prepared{svc: svc, kind: KindExtract}
	a := fingerprint(ex, body(`{"url": "https://www.reddit.com/r/go", "limit": 5}`))
	if b := fingerprint(ex, body(`{"limit":5,"url":"https://www.reddit.com/r/go"}`)); a != b {
		t.Error("key order or whitespace changed the fingerprint")
	}
	for name, fp := range map[string][32]byte{
		"another limit":   fingerprint(ex, body(`{"url": "https://www.reddit.com/r/go", "limit": 6}`)),
		"another service": fingerprint(&prepared{svc: other, kind: KindExtract}, body(`{"url": "https://www.reddit.com/r/go", "limit": 5}`)),
		"a search":        fingerprint(&prepared{svc: svc, kind: KindSearch}, body(`{"url": "https://www.reddit.com/r/go", "limit": 5}`)),
	} {
		if fp == a {
			t.Errorf("%s has the same fingerprint", name)
		}
	}
}

// TestRecordsPaging: a settled run's records page by cursor and limit; a
// foreign or malformed cursor is 400, a run in flight 409, an unknown one
// 404.
func TestRecordsPaging(t *testing.T) {
	a := newTestAPI(t, 10*credits.PerCredit)
	now := time.Now().UTC()
	run := &runs.Run{ID: "ext_p1", Status: runs.StatusCompleted, Platform: "pro_net", AccountID: "acme", KeyID: a.key.ID,
		CreatedAt: now, CompletedAt: now}
	for i := range 7 {
		run.Data = append(run.Data, json.RawMessage(`{"n":`+string(rune('0'+i))+`}`))
	}
	if _, err := a.store.Settle(t.Context(), store.Settlement{Run: run, Price: 1, Offer: "o", Platform: "pro_net", Now: now}); err != nil {
		t.Fatal(err)
	}
	var got []string
	path := "/v1/extractions/ext_p1/records?limit=3"
	for range 5 {
		res, _ := a.do(t, "GET", path, "", true)
		var page recordsPage
		if res.StatusCode != 200 || json.NewDecoder(res.Body).Decode(&page) != nil || page.Total != 7 {
			t.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		for _, r := range page.Data {
			got = append(got, string(r))
		}
		if page.NextCursor == nil {
			break
		}
		path = "/v1/extractions/ext_p1/records?limit=3&cursor=" + *page.NextCursor
	}
	if strings.Join(got, "") != `{"n":0}{"n":1}{"n":2}{"n":3}{"n":4}{"n":5}{"n":6}` {
		t.Errorf("paged %v", got)
	}
	ar := store.AsyncRun{ID: "ext_a1", AccountID: "acme", KeyID: a.key.ID, Request: []byte(`{}`), Doc: []byte(`{"id":"ext_a1","status":"running"}`),
		CreatedAt: now, Deadline: now.Add(time.Hour)}
	if err := a.store.CreateAsyncRun(t.Context(), ar, 0); err != nil {
		t.Fatal(err)
	}
	other := "/v1/extractions/ext_p1/records?cursor=ZXh0X290aGVyOjM" // "ext_other:3"
	for _, tt := range []struct {
		path   string
		status int
		code   string
	}{
		{other, 400, "invalid_cursor"},
		{"/v1/extractions/ext_p1/records?cursor=%21", 400, "invalid_cursor"},
		{"/v1/extractions/ext_p1/records?limit=0", 400, "invalid_limit"},
		{"/v1/extractions/ext_p1/records?limit=1001", 400, "invalid_limit"},
		{"/v1/extractions/ext_a1/records", 409, "run_not_finished"},
		{"/v1/extractions/ext_none/records", 404, "not_found"},
	} {
		res, e := a.do(t, "GET", tt.path, "", true)
		if res.StatusCode != tt.status || e.Code != tt.code {
			t.Errorf("GET %s: %d %s, want %d %s", tt.path, res.StatusCode, e.Code, tt.status, tt.code)
		}
	}
	// GET of the run in flight answers its document.
	res, _ := a.do(t, "GET", "/v1/extractions/ext_a1", "", true)
	var doc map[string]any
	if res.StatusCode != 200 || json.NewDecoder(res.Body).Decode(&doc) != nil || doc["status"] != "running" {
		t.Errorf("GET of a run in flight: %d %v", res.StatusCode, doc)
	}
}
