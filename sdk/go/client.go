// Package sdr is the Go client of the Social Data Router API.
//
// The record, run and catalogue types and the named calls of every
// catalogue service (client.Extract.ProNet.CompanyInfo) are generated from
// the gateway's OpenAPI document (types_gen.go, services_gen.go; make sdk);
// this file and its neighbours are the hand-written part: the key and base
// URL, retries under an Idempotency-Key, typed errors, async run handles
// and webhook verification.
package sdr

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultBaseURL is the API's address when WithBaseURL is not given.
const DefaultBaseURL = "https://api.socialdatarouter.com"

// Client calls the API with one key. It is safe for concurrent use.
type Client struct {
	// Extract holds the catalogue's services, a field per platform.
	Extract Extract

	key, base     string
	http          *http.Client
	maxRetries    int
	maxRetryAfter time.Duration
	backoff       time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithBaseURL sets the API's address (scheme and host, no /v1).
func WithBaseURL(u string) Option { return func(c *Client) { c.base = strings.TrimRight(u, "/") } }

// WithHTTPClient sets the http.Client requests go through.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithMaxRetries sets how many times a call is retried (default 3).
func WithMaxRetries(n int) Option { return func(c *Client) { c.maxRetries = n } }

// WithMaxRetryAfter sets the longest Retry-After the client waits out
// itself (default 60s); a longer one is returned as the error.
func WithMaxRetryAfter(d time.Duration) Option { return func(c *Client) { c.maxRetryAfter = d } }

// WithBackoff sets the first wait after a network error (default 500ms,
// doubled each retry, with jitter).
func WithBackoff(d time.Duration) Option { return func(c *Client) { c.backoff = d } }

// NewClient returns a client of the API for key (sdr_live_… or sdr_test_…).
func NewClient(key string, opts ...Option) *Client {
	c := &Client{key: key, base: DefaultBaseURL, http: http.DefaultClient, maxRetries: 3,
		maxRetryAfter: 60 * time.Second, backoff: 500 * time.Millisecond}
	for _, o := range opts {
		o(c)
	}
	c.Extract = newExtract(c)
	return c
}

// CallOption configures one call.
type CallOption func(*callConfig)

type callConfig struct {
	idempotencyKey string
	header         http.Header
}

// WithIdempotencyKey sets the call's Idempotency-Key (default: a random
// UUID per call, the same on each of its retries).
func WithIdempotencyKey(k string) CallOption {
	return func(c *callConfig) { c.idempotencyKey = k }
}

// WithHeader adds a request header to the call.
func WithHeader(name, value string) CallOption {
	return func(c *callConfig) {
		if c.header == nil {
			c.header = http.Header{}
		}
		c.header.Add(name, value)
	}
}

func newCallConfig(opts []CallOption) callConfig {
	var cc callConfig
	for _, o := range opts {
		o(&cc)
	}
	return cc
}

// response is a successful answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends one call and retries it where that is safe: every POST carries
// an Idempotency-Key (the same on each retry), so a retried POST answers
// the run the first attempt started and is charged once (docs/async.md).
// It retries a network error, a 429 for rate (not credit_limit_exceeded,
// which is money) with a Retry-After it may wait, 409
// idempotency_key_in_use (the first attempt still runs), a 503 with
// Retry-After (refused before a run was stored, so the key is free), and
// a 502 or 504 that carries no run id: one from a proxy in front of the
// gateway, which the key makes safe to send again. A 502/504 of the
// gateway names its settled run; the same key would only replay it.
func (c *Client) do(ctx context.Context, method, path string, body any, cc callConfig) (*response, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("sdr: encoding the request body: %w", err)
		}
	}
	key := cc.idempotencyKey
	if method == http.MethodPost && key == "" {
		key = newUUID()
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(payload))
		if err != nil {
			return nil, err
		}
		if payload == nil {
			req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
		}
		for k, vs := range cc.header {
			req.Header[k] = vs
		}
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "sdr-go")
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := c.http.Do(req)
		var wait time.Duration
		if err != nil {
			if ctx.Err() != nil || attempt >= c.maxRetries {
				return nil, &NetworkError{Err: err, IdempotencyKey: key, Attempts: attempt + 1}
			}
			wait = c.backoffFor(attempt)
		} else {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr != nil {
				if ctx.Err() != nil || attempt >= c.maxRetries {
					return nil, &NetworkError{Err: rerr, IdempotencyKey: key, Attempts: attempt + 1}
				}
				wait = c.backoffFor(attempt)
			} else if resp.StatusCode < 400 {
				return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
			} else {
				apiErr := newAPIError(resp, b, key)
				w, ok := c.retryable(method, apiErr)
				if !ok || attempt >= c.maxRetries {
					return nil, apiErr
				}
				wait = w
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// retryable says whether an error answer may be sent again, and after
// how long.
func (c *Client) retryable(method string, e *APIError) (time.Duration, bool) {
	fits := e.RetryAfter > 0 && e.RetryAfter <= c.maxRetryAfter
	switch {
	case e.Status == http.StatusTooManyRequests:
		return e.RetryAfter, fits && e.Code != CodeCreditLimitExceeded
	case e.Status == http.StatusConflict && e.Code == CodeIdempotencyKeyInUse:
		return max(e.RetryAfter, time.Second), e.RetryAfter <= c.maxRetryAfter
	case e.Status == http.StatusServiceUnavailable:
		return e.RetryAfter, fits
	case e.Status == http.StatusBadGateway || e.Status == http.StatusGatewayTimeout:
		// The gateway's own 502/504 names the stored run: a retry with the
		// key replays it. A proxy's has no run id, and the key makes a
		// retry safe (GETs are safe anyway).
		return c.backoff, e.RunID == "" && e.Code == ""
	}
	return 0, false
}

func (c *Client) backoffFor(attempt int) time.Duration {
	d := time.Duration(float64(c.backoff) * math.Pow(2, float64(attempt)))
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

// send sends a call and decodes its answer as a T.
func send[T any](ctx context.Context, c *Client, method, path string, body any, cc callConfig) (*T, error) {
	resp, err := c.do(ctx, method, path, body, cc)
	if err != nil {
		return nil, err
	}
	var v T
	if err := decode(resp, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// get decodes the answer of a GET into v.
func (c *Client) get(ctx context.Context, path string, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil, callConfig{})
	if err != nil {
		return err
	}
	return decode(resp, v)
}

func decode(resp *response, v any) error {
	if err := json.Unmarshal(resp.body, v); err != nil {
		return fmt.Errorf("sdr: decoding a %d answer: %w", resp.status, err)
	}
	return nil
}

// newUUID is a random (version 4) UUID, the default Idempotency-Key.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// retryAfter reads a Retry-After header in seconds or as an HTTP date.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}
