package api

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// TestCoreCallsAnswerAsTheRoutes: each call without HTTP gives the bytes,
// or the error code, its /v1 route answers, which is what lets the MCP
// tools answer exactly as REST.
func TestCoreCallsAnswerAsTheRoutes(t *testing.T) {
	a := newTestAPI(t, 3*credits.PerCredit)
	now := time.Now().UTC()
	run := &runs.Run{ID: "ext_1", Status: runs.StatusCompleted, Platform: "pro_net", AccountID: "acme", KeyID: a.key.ID,
		Data: []json.RawMessage{json.RawMessage(`{"n":1}`)}, CreatedAt: now, CompletedAt: now}
	if _, err := a.store.Settle(t.Context(), store.Settlement{Run: run, Price: 1, Offer: "o", Platform: "pro_net", Now: now}); err != nil {
		t.Fatal(err)
	}
	doc := func(v map[string]any, e *Error) ([]byte, *Error) {
		if e != nil {
			return nil, e
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b, nil
	}
	ctx := t.Context()
	tests := []struct {
		path string
		call func() ([]byte, *Error)
	}{
		{"/v1/services", func() ([]byte, *Error) { return a.Catalogue("", "") }},
		{"/v1/services/pro_net", func() ([]byte, *Error) { return a.Catalogue("pro_net", "") }},
		{"/v1/services/mars_net", func() ([]byte, *Error) { return a.Catalogue("mars_net", "") }},
		{"/v1/services/pro_net/profile.info", func() ([]byte, *Error) { return a.Catalogue("pro_net", "profile.info") }},
		{"/v1/services/pro_net/profile.infp", func() ([]byte, *Error) { return a.Catalogue("pro_net", "profile.infp") }},
		{"/v1/extractions/ext_1", func() ([]byte, *Error) { return a.RunJSON(ctx, nil, a.key, "ext_1") }},
		{"/v1/extractions/ext_2", func() ([]byte, *Error) { return a.RunJSON(ctx, nil, a.key, "ext_2") }},
		{"/v1/extractions/run_1", func() ([]byte, *Error) { return a.RunJSON(ctx, nil, a.key, "run_1") }},
		{"/v1/account/balance", func() ([]byte, *Error) { return doc(a.Balance(ctx, a.key)) }},
		{"/v1/account/usage", func() ([]byte, *Error) { return doc(a.Usage(ctx, a.key, "", false)) }},
		{"/v1/account/usage?days=7", func() ([]byte, *Error) { return doc(a.Usage(ctx, a.key, "7", true)) }},
		{"/v1/account/usage?days=", func() ([]byte, *Error) { return doc(a.Usage(ctx, a.key, "", true)) }},
	}
	for _, tt := range tests {
		res, e := a.do(t, "GET", tt.path, "", true)
		got, gotErr := tt.call()
		if res.StatusCode >= 400 {
			if gotErr == nil || gotErr.Code != e.Code || gotErr.Status != res.StatusCode || gotErr.Message != e.Message {
				t.Errorf("%s: %+v, want %d %+v", tt.path, gotErr, res.StatusCode, e)
			}
			continue
		}
		want, _ := io.ReadAll(res.Body)
		if gotErr != nil || !jsonEqual(t, got, want) {
			t.Errorf("%s: %s %+v, want %s", tt.path, got, gotErr, want)
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// TestAuthenticateHeader: the header string is judged as the request's.
func TestAuthenticateHeader(t *testing.T) {
	a := newTestAPI(t, 0)
	tests := []struct{ header, code string }{
		{"", "missing_api_key"},
		{"Token " + a.secret, "invalid_api_key"},
		{"Bearer sdr_live_zzz", "invalid_api_key"},
		{"Bearer " + a.secret, ""},
	}
	for _, tt := range tests {
		k, e := a.AuthenticateHeader(t.Context(), tt.header)
		switch {
		case tt.code == "" && (e != nil || k.ID != a.key.ID):
			t.Errorf("%q: %+v, %+v", tt.header, k, e)
		case tt.code != "" && (e == nil || e.Code != tt.code):
			t.Errorf("%q: %+v, want %s", tt.header, e, tt.code)
		}
	}
}

// TestParseObjectAndAppendRun: a tool's arguments are refused as a body
// is, and a run renders with its records as they are.
func TestParseObjectAndAppendRun(t *testing.T) {
	for _, in := range []string{"", "[]", "null", `{"a":1} {}`} {
		if _, e := ParseObject([]byte(in)); e == nil || e.Code != "invalid_json" || e.Status != 400 {
			t.Errorf("%q: %+v, want invalid_json", in, e)
		}
	}
	if m, e := ParseObject([]byte(` {"urls": ["x"]} `)); e != nil || string(m["urls"]) != `["x"]` {
		t.Errorf("object: %v %+v", m, e)
	}
	run := &runs.Run{ID: "ext_9", Status: runs.StatusCompleted, Data: []json.RawMessage{json.RawMessage(`{"a":"<&>"}`)}}
	b, err := AppendRun([]byte("x"), run)
	var got runs.Run
	if err != nil || b[0] != 'x' || json.Unmarshal(b[1:], &got) != nil || got.ID != "ext_9" || len(got.Data) != 1 || string(got.Data[0]) != `{"a":"<&>"}` {
		t.Errorf("AppendRun: %s %v", b, err)
	}
	if len(run.Data) != 1 {
		t.Error("AppendRun changed the run")
	}
}
