package sdr_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdr "socialrouter/sdk/go"
)

// TestErrorsTyped: each documented error a client can meet comes back as
// an *sdr.APIError with its status, code and type, and nothing is charged.
// All on test keys: the upstream failures are the magic inputs of
// docs/testmode.md, and request_timeout is sdr-test-slow (5 s) pinned to
// one offer under the gateway's 3 s attempt deadline (tests/sdk_test.go).
func TestErrorsTyped(t *testing.T) {
	e := gateway(t)
	ctx := ctxT(t)
	_, key := e.account(t, 100, nil)
	c := sdr.NewClient(key, sdr.WithBaseURL(e.base), sdr.WithMaxRetries(0))
	_, poorKey := e.account(t, 0, nil)
	_, limitedKey := e.account(t, 100, map[string]any{"period": "day", "credits": 0.000001})
	revokedID, revokedKey := e.key(t, e.newAccount(t, 0), "test", nil)
	e.adminJSON(t, "DELETE", "/sdr/keys/"+revokedID, nil, nil)
	with := func(k string) *sdr.Client { return sdr.NewClient(k, sdr.WithBaseURL(e.base), sdr.WithMaxRetries(0)) }
	raw := func(c *sdr.Client, platform, service string, body any) func(context.Context) error {
		return func(ctx context.Context) error { _, err := c.ExtractRaw(ctx, platform, service, body); return err }
	}
	profile := func(c *sdr.Client, req sdr.ProNetProfileInfoRequest, opts ...sdr.CallOption) func(context.Context) error {
		return func(ctx context.Context) error { _, err := c.Extract.ProNet.ProfileInfo(ctx, req, opts...); return err }
	}
	search := func(req sdr.SearchRequest) func(context.Context) error {
		return func(ctx context.Context) error { _, err := c.Search(ctx, req); return err }
	}
	reusedKey := "sdk-go-reused-" + time.Now().Format("150405.000000")
	cases := []struct {
		name, code, typ string
		status          int
		setup           func(t *testing.T)
		call            func(context.Context) error
	}{
		{"bad url", "invalid_input_format", "validation", 400, nil, profile(c, sdr.ProNetProfileInfoRequest{URL: "https://example.com/nobody"})},
		{"unknown field", "unknown_field", "validation", 400, nil, raw(c, "pro_net", "profile.info", map[string]any{"url": profileURL, "bogus": 1})},
		{"wrong input field", "wrong_input_field", "validation", 400, nil, raw(c, "pro_net", "profile.info", map[string]any{"queries": []string{"x"}})},
		{"missing input", "missing_input", "validation", 400, nil, raw(c, "pro_net", "profile.info", map[string]any{})},
		{"conflicting input", "conflicting_input", "validation", 400, nil, raw(c, "pro_net", "profile.info", map[string]any{"url": profileURL, "urls": []string{profileURL}})},
		{"invalid field", "invalid_field", "validation", 400, nil, raw(c, "pro_net", "profile.info", map[string]any{"urls": profileURL})},
		{"limit", "invalid_limit", "validation", 400, nil, profile(c, sdr.ProNetProfileInfoRequest{URL: profileURL, Limit: 5000})},
		{"option", "invalid_option", "validation", 400, nil, raw(c, "video_net", "channel.videos", map[string]any{"url": "https://www.youtube.com/@mkbhd", "options": map[string]any{"nope": 1}})},
		{"offer", "unknown_offer", "validation", 400, nil, profile(c, sdr.ProNetProfileInfoRequest{URL: profileURL, Provider: "source_z/nothing"})},
		{"platform", "unknown_platform", "not_found", 404, nil, raw(c, "nope_net", "profile.info", map[string]any{"url": profileURL})},
		{"service", "unknown_service", "not_found", 404, nil, raw(c, "pro_net", "profile.infos", map[string]any{"url": profileURL})},
		{"run", "not_found", "not_found", 404, nil, func(ctx context.Context) error {
			_, err := sdr.Handle[sdr.ProProfile](c, "ext_00000000000000000000000000").Status(ctx)
			return err
		}},
		{"search provider", "missing_provider", "validation", 400, nil, search(sdr.SearchRequest{Queries: []string{"coffee"}})},
		{"search cursor", "invalid_cursor", "validation", 400, nil, search(sdr.SearchRequest{Provider: "source_a/maps/place.search", Queries: []string{"coffee"}, Cursor: "not-a-cursor"})},
		{"no key", "missing_api_key", "authentication", 401, nil, profile(with(""), sdr.ProNetProfileInfoRequest{URL: profileURL})},
		{"bad key", "invalid_api_key", "authentication", 401, nil, profile(with("sdr_test_nope"), sdr.ProNetProfileInfoRequest{URL: profileURL})},
		{"revoked key", "revoked_api_key", "authentication", 401, nil, profile(with(revokedKey), sdr.ProNetProfileInfoRequest{URL: profileURL})},
		{"no credits", "insufficient_credits", "billing", 402, nil, profile(with(poorKey), sdr.ProNetProfileInfoRequest{URL: profileURL})},
		{"credit limit", "credit_limit_exceeded", "rate_limit", 429, nil, profile(with(limitedKey), sdr.ProNetProfileInfoRequest{URL: profileURL})},
		{"idempotency key", "invalid_idempotency_key", "validation", 400, nil, profile(c, sdr.ProNetProfileInfoRequest{URL: profileURL}, sdr.WithIdempotencyKey(strings.Repeat("k", 300)))},
		{"key reused", "idempotency_key_reused", "validation", 422, func(t *testing.T) {
			if _, err := c.Extract.ProNet.ProfileInfo(ctx, sdr.ProNetProfileInfoRequest{URL: profileURL}, sdr.WithIdempotencyKey(reusedKey)); err != nil {
				t.Fatal(err)
			}
		}, profile(c, sdr.ProNetProfileInfoRequest{URL: profileURL, Limit: 2}, sdr.WithIdempotencyKey(reusedKey))},
		{"provider", "provider_error", "provider", 502, nil, profile(c, sdr.ProNetProfileInfoRequest{URL: magicProviderError})},
		{"upstream rate limit", "upstream_rate_limited", "rate_limit", 429, nil, profile(c, sdr.ProNetProfileInfoRequest{URL: magicRateLimited})},
		{"upstream stalled", "request_soft_timeout", "timeout", 504, nil, profile(c, sdr.ProNetProfileInfoRequest{URL: magicSoftTimeout})},
		{"upstream too slow", "request_timeout", "timeout", 504, nil, profile(c, sdr.ProNetProfileInfoRequest{URL: magicSlow, Provider: "source_b/pro_net"})},
		{"body too large", "request_too_large", "validation", 413, nil, raw(c, "pro_net", "profile.info", map[string]any{"url": profileURL, "pad": strings.Repeat("x", 2<<20)})},
		{"search queries", "missing_queries", "validation", 400, nil, search(sdr.SearchRequest{Provider: "source_a/maps/place.search", Queries: []string{}})},
		{"search endpoint", "wrong_endpoint", "validation", 400, nil, search(sdr.SearchRequest{Provider: "source_b/pro_net/profile.info", Queries: []string{"x"}})},
		{"search unknown provider", "unknown_provider", "validation", 400, nil, search(sdr.SearchRequest{Provider: "source_z/maps/place.search", Queries: []string{"x"}})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			before := balance(t, c)
			err := expectCode(t, tc.call(ctx), tc.status, tc.code)
			if err.Type != tc.typ {
				t.Errorf("type %q, want %q", err.Type, tc.typ)
			}
			if (tc.status == 502 || tc.status == 504) && (err.RunID == "" || len(err.Details.Attempts) == 0) {
				t.Errorf("%s without its run id and attempts: %+v", tc.code, err)
			}
			if tc.code == "upstream_rate_limited" && (err.RetryAfter != e.testRetryAfter || !err.IsRateLimit() || err.IsMoney()) {
				t.Errorf("upstream_rate_limited: Retry-After %v, rate %v, money %v", err.RetryAfter, err.IsRateLimit(), err.IsMoney())
			}
			if tc.code == "credit_limit_exceeded" && (err.RetryAfter <= 0 || !err.IsMoney() || err.IsRateLimit()) {
				t.Errorf("credit_limit_exceeded: Retry-After %v, money %v, rate %v", err.RetryAfter, err.IsMoney(), err.IsRateLimit())
			}
			if after := balance(t, c); after != before {
				t.Errorf("balance %v → %v for a refused call", before, after)
			}
		})
	}
}
