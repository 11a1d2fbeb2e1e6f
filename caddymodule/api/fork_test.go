package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/limits"
)

func TestPrefersAsync(t *testing.T) {
	on := &API{Config: Config{Async: async.New(async.Config{})}}
	off := &API{}
	tests := []struct {
		prefer []string
		want   bool
	}{
		{nil, false},
		{[]string{"respond-async"}, true},
		{[]string{"Respond-Async"}, true},
		{[]string{"return=minimal, respond-async, wait=10"}, true},
		{[]string{"wait=10", "respond-async"}, true},
		{[]string{"respond-async=1"}, true},
		{[]string{"return=representation"}, false},
		{[]string{"respond-asynchronously"}, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for _, v := range tt.prefer {
			h.Add("Prefer", v)
		}
		if got := on.prefersAsync(h); got != tt.want {
			t.Errorf("Prefer %q: %v, want %v", tt.prefer, got, tt.want)
		}
		if off.prefersAsync(h) {
			t.Errorf("Prefer %q applied by an API without async runs", tt.prefer)
		}
	}
}

// TestAsyncLimits: the async limit is accepted only with the preference,
// and the constants are those of the OpenAPI document.
func TestAsyncLimits(t *testing.T) {
	reg := loadRegistry(t)
	svc, _ := reg.Service("forum_net", "subreddit.posts")
	m := func(limit int) map[string]json.RawMessage {
		b, _ := json.Marshal(limit)
		return map[string]json.RawMessage{"url": json.RawMessage(`"https://www.reddit.com/r/go"`), "limit": b}
	}
	if _, apiErr := parseExtractLimit(svc, m(limits.ExtractLimitMax+1), limitMax(false)); apiErr == nil || apiErr.Code != "invalid_limit" ||
		!strings.Contains(apiErr.Message, "up to 5000 with Prefer: respond-async") {
		t.Errorf("sync limit 251: %v", apiErr)
	}
	if _, apiErr := parseExtractLimit(svc, m(limits.AsyncLimitMax), limitMax(true)); apiErr != nil {
		t.Errorf("async limit 5000: %v", apiErr)
	}
	if _, apiErr := parseExtractLimit(svc, m(limits.AsyncLimitMax+1), limitMax(true)); apiErr == nil || apiErr.Code != "invalid_limit" {
		t.Errorf("async limit 5001: %v", apiErr)
	}
}
