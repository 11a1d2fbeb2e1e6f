package sdr

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestRetries: which error answers the client sends again, with the same
// Idempotency-Key, and which it returns at once.
func TestRetries(t *testing.T) {
	type answer struct {
		status int
		header map[string]string
		body   string
	}
	ok := answer{200, nil, `{"id":"ext_1","status":"completed","data":[]}`}
	cases := []struct {
		name    string
		answers []answer
		calls   int    // requests the server sees
		status  int    // the error's status, 0 for success
		code    string // the error's code
	}{
		{"rate limit waits Retry-After", []answer{{429, map[string]string{"Retry-After": "1"}, `{"error":{"code":"too_many_concurrent_runs","type":"rate_limit","message":"m"}}`}, ok}, 2, 0, ""},
		{"credit limit is money, not retried", []answer{{429, map[string]string{"Retry-After": "1"}, `{"error":{"code":"credit_limit_exceeded","type":"rate_limit","message":"m"}}`}}, 1, 429, "credit_limit_exceeded"},
		{"Retry-After too long", []answer{{429, map[string]string{"Retry-After": "3600"}, `{"error":{"code":"upstream_rate_limited","type":"rate_limit","message":"m"}}`}}, 1, 429, "upstream_rate_limited"},
		{"key in use", []answer{{409, map[string]string{"Retry-After": "1"}, `{"error":{"code":"idempotency_key_in_use","type":"validation","message":"m"}}`}, ok}, 2, 0, ""},
		{"proxy 502", []answer{{502, nil, `bad gateway`}, ok}, 2, 0, ""},
		{"gateway 502 names its run", []answer{{502, map[string]string{"X-Run-Id": "ext_9"}, `{"error":{"code":"provider_error","type":"provider","message":"m","run_id":"ext_9"}}`}}, 1, 502, "provider_error"},
		{"store unavailable", []answer{{503, map[string]string{"Retry-After": "1"}, `{"error":{"code":"store_unavailable","type":"internal","message":"m"}}`}, ok}, 2, 0, ""},
		{"validation", []answer{{400, nil, `{"error":{"code":"invalid_limit","type":"validation","message":"m"}}`}}, 1, 400, "invalid_limit"},
		{"gives up after its retries", []answer{{504, nil, ``}}, 3, 504, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var keys []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n := len(keys)
				keys = append(keys, r.Header.Get("Idempotency-Key"))
				mu.Unlock()
				a := tc.answers[min(n, len(tc.answers)-1)]
				for k, v := range a.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(a.status)
				_, _ = w.Write([]byte(a.body))
			}))
			defer srv.Close()
			c := NewClient("k", WithBaseURL(srv.URL), WithMaxRetries(2), WithBackoff(10*time.Millisecond))
			_, err := c.ExtractRaw(context.Background(), "p", "s", map[string]any{"url": "u"})
			if len(keys) != tc.calls {
				t.Errorf("%d requests, want %d", len(keys), tc.calls)
			}
			for _, k := range keys {
				if k == "" || k != keys[0] {
					t.Errorf("Idempotency-Keys %q: want one key on every attempt", keys)
				}
			}
			var e *APIError
			if tc.status == 0 {
				if err != nil {
					t.Errorf("error %v, want success", err)
				}
				return
			}
			if !errors.As(err, &e) || e.Status != tc.status || e.Code != tc.code || e.IdempotencyKey != keys[0] {
				t.Errorf("error %v, want %d %q with the call's key", err, tc.status, tc.code)
			}
		})
	}
}

// TestNetworkErrorRetried: a connection that breaks before the answer is
// retried with the same key.
func TestNetworkErrorRetried(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		first := len(keys) == 1
		mu.Unlock()
		if first {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		_, _ = w.Write([]byte(`{"id":"ext_1","status":"completed","data":[]}`))
	}))
	defer srv.Close()
	c := NewClient("k", WithBaseURL(srv.URL), WithBackoff(10*time.Millisecond), WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
	if _, err := c.ExtractRaw(context.Background(), "p", "s", map[string]any{"url": "u"}); err != nil {
		t.Fatal(err)
	}
	if len(keys) < 2 || keys[0] == "" || keys[len(keys)-1] != keys[0] {
		t.Errorf("keys %q: want the dropped call retried with its key", keys)
	}
}
