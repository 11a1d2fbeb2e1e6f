package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAsyncMaxPerAccount: concurrent submits past the account's cap of
// async runs in flight get exactly the cap in; the others are 429
// too_many_async_runs with Retry-After, and store nothing.
func TestAsyncMaxPerAccount(t *testing.T) {
	for _, tc := range []struct {
		name            string
		max, submits    int
		wantIn, wantCap int
	}{
		{"cap 3, 12 at once", 3, 12, 3, 3},
		{"default cap, 5 at once", 0, 5, 5, DefaultAsyncMaxPerAccount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &notes{events: map[string]string{}, docs: map[string][]byte{}}
			a := newAsyncAPI(t, 5*time.Second, n) // runs stay in flight for the test
			a.AsyncMaxPerAccount = tc.max
			var wg sync.WaitGroup
			codes := make([]*httptest.ResponseRecorder, tc.submits)
			for i := range tc.submits {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := httptest.NewRequest("POST", "/v1/extract/forum_net/subreddit.posts",
						strings.NewReader(`{"url": "https://www.reddit.com/r/golang", "provider": "source_a/actor_6", "limit": 2}`))
					r.Header.Set("Authorization", "Bearer "+a.secret)
					r.Header.Set("Prefer", "respond-async")
					codes[i] = httptest.NewRecorder()
					a.ServeHTTP(codes[i], r)
				}()
			}
			wg.Wait()
			in := 0
			for _, rec := range codes {
				switch rec.Code {
				case http.StatusAccepted:
					in++
				case http.StatusTooManyRequests:
					var e struct{ Error errorBody }
					_ = json.Unmarshal(rec.Body.Bytes(), &e)
					if e.Error.Code != "too_many_async_runs" || rec.Header().Get("Retry-After") != "10" ||
						!strings.Contains(e.Error.Message, "async runs in flight") {
						t.Errorf("refusal: %s %s, Retry-After %q", e.Error.Code, e.Error.Message, rec.Header().Get("Retry-After"))
					}
				default:
					t.Errorf("submit: %d %s", rec.Code, rec.Body)
				}
			}
			if in != tc.wantIn {
				t.Errorf("%d of %d submits accepted, want %d", in, tc.submits, tc.wantIn)
			}
			if got, _ := a.store.CountAsyncRuns(t.Context(), "acme"); got != tc.wantIn {
				t.Errorf("%d async runs in flight, want %d", got, tc.wantIn)
			}
			if a.asyncMax() != tc.wantCap {
				t.Errorf("cap %d, want %d", a.asyncMax(), tc.wantCap)
			}
		})
	}
}
