package sources

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// seen is what a test upstream received.
type seen struct {
	method, path, auth, contentType string
	query                           map[string]string
	body                            string
}

func record(r *http.Request) seen {
	b, _ := io.ReadAll(r.Body)
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = v[0]
	}
	return seen{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"),
		contentType: r.Header.Get("Content-Type"), query: q, body: string(b)}
}

func TestActorRunRequestAndItems(t *testing.T) {
	ctxDeadline := func(d time.Duration) func() (context.Context, context.CancelFunc) {
		return func() (context.Context, context.CancelFunc) { return context.WithTimeout(context.Background(), d) }
	}
	background := func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }
	tests := []struct {
		name        string
		call        Call
		ctx         func() (context.Context, context.CancelFunc)
		token       string
		status      int
		wantTimeout string
		wantMax     string
		wantBody    string
		wantAuth    string
	}{
		{name: "timeout from call, limit", call: Call{Target: "dev_fusion~linkedin-profile-scraper", Body: map[string]any{"profileUrls": []string{"u"}}, Limit: 7, Timeout: 90 * time.Second},
			ctx: background, token: "s3cret", status: 201, wantTimeout: "90", wantMax: "7", wantBody: `{"profileUrls":["u"]}`, wantAuth: "Bearer s3cret"},
		{name: "timeout capped at 300", call: Call{Target: "a~b", Body: json.RawMessage(`{"x":1}`), Timeout: 20 * time.Minute},
			ctx: background, status: 200, wantTimeout: "300", wantBody: `{"x":1}`},
		{name: "timeout rounded up", call: Call{Target: "a~b", Timeout: 1500 * time.Millisecond},
			ctx: background, status: 200, wantTimeout: "2", wantBody: `{}`},
		{name: "timeout from context", call: Call{Target: "a~b", Body: map[string]any{}},
			ctx: ctxDeadline(45 * time.Second), status: 200, wantTimeout: "45", wantBody: `{}`},
		{name: "no deadline at all", call: Call{Target: "a~b", Body: map[string]any{}},
			ctx: background, status: 200, wantTimeout: "300", wantBody: `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got seen
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = record(r)
				w.Header().Set("X-Apify-Run-Id", "run_abc")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, `[{"fullName":"Jane"},{"url":"u","error":"blocked"}]`)
			}))
			defer srv.Close()
			core, logs := observer.New(zap.DebugLevel)
			c, err := NewActorRun(Config{BaseURL: srv.URL + "/", Token: tc.token, Logger: zap.New(core)})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := tc.ctx()
			defer cancel()
			res, err := c.Do(ctx, tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if got.method != http.MethodPost || got.path != "/v2/acts/"+tc.call.Target+"/run-sync-get-dataset-items" {
				t.Errorf("request %s %s", got.method, got.path)
			}
			if got.query["timeout"] != tc.wantTimeout || got.query["maxItems"] != tc.wantMax {
				t.Errorf("query %v, want timeout=%s maxItems=%q", got.query, tc.wantTimeout, tc.wantMax)
			}
			if got.body != tc.wantBody || got.contentType != "application/json" {
				t.Errorf("body %q (%s), want %q", got.body, got.contentType, tc.wantBody)
			}
			if got.auth != tc.wantAuth {
				t.Errorf("Authorization %q, want %q", got.auth, tc.wantAuth)
			}
			if len(res.Items) != 2 || res.ErrorItems != 1 || res.Status != tc.status {
				t.Errorf("result items=%d errors=%d status=%d", len(res.Items), res.ErrorItems, res.Status)
			}
			if len(res.Handles) != 1 || res.Handles[0] != "run_abc" {
				t.Errorf("handles %v", res.Handles)
			}
			if tc.token != "" {
				for _, e := range logs.All() {
					if strings.Contains(e.Message+" "+toString(e.ContextMap()), tc.token) {
						t.Errorf("token logged: %v", e)
					}
				}
			}
		})
	}
}

func toString(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

func TestActorRunParams(t *testing.T) {
	var got seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = record(r)
		_, _ = io.WriteString(w, `[]`)
	}))
	defer srv.Close()
	c, _ := NewActorRun(Config{BaseURL: srv.URL})
	res, err := c.Do(context.Background(), Call{Target: "a~b", Params: map[string]string{"memory": "1024", "timeout": "1"}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got.query["memory"] != "1024" || got.query["timeout"] != "60" {
		t.Errorf("query %v: offer params must be passed, protocol params must win", got.query)
	}
	if res.Items == nil || len(res.Items) != 0 {
		t.Errorf("an empty array is an empty, non-nil result: %#v", res.Items)
	}
}
