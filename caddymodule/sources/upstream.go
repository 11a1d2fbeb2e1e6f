package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"socialrouter/internal/bufpool"
	"socialrouter/internal/jsonscan"
	"socialrouter/internal/jsontree"
)

// maxBodyBytes bounds one upstream answer so a runaway upstream cannot
// exhaust memory; a larger body is reported as malformed.
const maxBodyBytes = 256 << 20

// maxMessageBytes bounds the upstream text copied into an Error message.
const maxMessageBytes = 512

var (
	sharedClientOnce sync.Once
	sharedClient     *http.Client
)

// defaultHTTPClient is shared by every Client built without one so that
// connections to the same upstream are reused across sources and protocols.
// It has no overall timeout: deadlines come from the context.
func defaultHTTPClient() *http.Client {
	sharedClientOnce.Do(func() {
		sharedClient = &http.Client{Transport: NewTransport()}
	})
	return sharedClient
}

// Buffers of an upstream connection. A call held on a long upstream job
// keeps one connection for its poll, and net/http gives each connection a
// 4 KiB write and a 4 KiB read buffer: memory per held call. What the
// gateway writes upstream is a few hundred bytes (a poll, a run's input;
// a larger body is written in more than one piece), and it reads answers
// into buffers of its own (readBody), which bufio bypasses for reads
// larger than its buffer, so the read buffer only holds status lines and
// headers.
const (
	writeBufferSize = 1 << 10
	readBufferSize  = 1 << 10
)

// NewTransport is the HTTP transport of upstream clients: net/http's
// default (proxy from the environment, HTTP/2 where TLS offers it,
// keep-alives) with connections pooled for many concurrent calls to few
// hosts, and small buffers (writeBufferSize).
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	t.WriteBufferSize = writeBufferSize
	t.ReadBufferSize = readBufferSize
	return t
}

// base holds what both protocols share: configuration and the HTTP plumbing.
type base struct {
	protocol string
	cfg      Config
	baseURL  string
	hc       *http.Client
	log      *zap.Logger
	// getHeader and sendHeader are the headers of every request without
	// and with a body, built once and shared: net/http's client and
	// transport only read a request's header (the client clones it for a
	// redirect), and a held call keeps its poll's request, so a header of
	// its own per exchange was memory per held call and garbage per poll.
	getHeader, sendHeader http.Header
}

func newBase(protocol string, cfg Config) (base, error) {
	b := base{protocol: protocol, cfg: cfg}
	b.baseURL = strings.TrimRight(cfg.BaseURL, "/")
	if b.baseURL == "" {
		return b, fmt.Errorf("%s: base URL is required", protocol)
	}
	if !strings.HasPrefix(b.baseURL, "http://") && !strings.HasPrefix(b.baseURL, "https://") {
		return b, fmt.Errorf("%s: base URL %q must start with http:// or https://", protocol, cfg.BaseURL)
	}
	b.hc = cfg.HTTPClient
	if b.hc == nil {
		b.hc = defaultHTTPClient()
	}
	b.log = cfg.Logger
	if b.log == nil {
		b.log = zap.NewNop()
	}
	b.getHeader = http.Header{"Accept": {"application/json"}, "User-Agent": {"socialrouter-sources/1"}}
	if cfg.Token != "" {
		b.getHeader["Authorization"] = []string{"Bearer " + cfg.Token}
	}
	b.sendHeader = b.getHeader.Clone()
	b.sendHeader["Content-Type"] = []string{"application/json"}
	return b, nil
}

// ReturnsOnCancel marks both protocols' clients (ReturnsOnCancel): their
// exchanges are net/http requests with the call's context and their poll
// timer selects on it.
func (b *base) ReturnsOnCancel() {}

// answer is one upstream HTTP exchange, its body read once.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	buf     *[]byte // body's pooled buffer, or nil
	handles []string
}

// release hands the answer's pooled buffer back once nothing reads its
// body any more: run polls and snapshot ids are read and dropped, and a
// call held for minutes should not leave a buffer per answer to the
// collector.
func (a *answer) release() {
	bodyBufs.Put(a.buf)
	a.buf, a.body = nil, nil
}

// exchange sends one request and reads the whole answer, calling activity
// when the headers arrive and whenever body bytes arrive. Failures to get a
// complete answer come back as *Error (network_error or timeout).
//
// A call held by a slow upstream waits in here: this frame and its callers'
// stay on the goroutine's stack for the whole wait, so building the request
// and reading the answer are functions of their own (see router.call).
func (b *base) exchange(ctx context.Context, method, url string, body []byte, activity func()) (*answer, error) {
	req, err := b.newRequest(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, transportError(ctx, "sending upstream request", err)
	}
	return b.read(ctx, req, resp, start, activity)
}

// newRequest builds an upstream request with the headers every exchange
// sends (shared, read-only: see base.getHeader).
func (b *base) newRequest(ctx context.Context, method, url string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, fmt.Errorf("%s: building upstream request: %w", b.protocol, err)
	}
	req.Header = b.getHeader
	if body != nil {
		req.Header = b.sendHeader
	}
	return req, nil
}

// read reads the whole answer of an exchange started at start and closes
// its body.
func (b *base) read(ctx context.Context, req *http.Request, resp *http.Response, start time.Time, activity func()) (*answer, error) {
	defer resp.Body.Close()
	var err error
	if activity != nil {
		activity()
	}
	a := &answer{status: resp.StatusCode, header: resp.Header, handles: runIDHandles(resp.Header)}
	a.body, a.buf, err = readBody(&activityReader{r: resp.Body, fn: activity}, resp.ContentLength)
	if err != nil {
		e := transportError(ctx, "reading upstream body", err)
		e.Status = resp.StatusCode
		e.Handles = a.handles
		return nil, e
	}
	if len(a.body) > maxBodyBytes {
		return nil, &Error{Outcome: OutcomeMalformed, Status: resp.StatusCode, Retryable: true, Handles: a.handles,
			Message: fmt.Sprintf("reading upstream body: larger than %d bytes", maxBodyBytes)}
	}
	b.log.Debug("upstream exchange",
		zap.String("protocol", b.protocol),
		zap.String("method", req.Method),
		zap.String("path", req.URL.Path),
		zap.Int("status", resp.StatusCode),
		zap.Int("bytes", len(a.body)),
		zap.Duration("duration", time.Since(start)),
		zap.Strings("handles", a.handles))
	return a, nil
}

// activityReader reports every successful read so that a caller's soft
// timeout sees a slow but live upstream as alive.
type activityReader struct {
	r  io.Reader
	fn func()
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 && a.fn != nil {
		a.fn()
	}
	return n, err
}

// transportError classifies a failure to complete an exchange: the context
// ending is a timeout (the caller's deadline or soft timeout), an I/O timeout
// of the transport too; anything else is a network error. Both are retryable.
func transportError(ctx context.Context, what string, err error) *Error {
	if ctx.Err() != nil {
		msg := fmt.Sprintf("%s: %v", what, ctx.Err())
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			msg = fmt.Sprintf("%s: %v (%v)", what, ctx.Err(), cause)
		}
		return &Error{Outcome: OutcomeTimeout, Retryable: true, Message: msg}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Outcome: OutcomeTimeout, Retryable: true, Message: fmt.Sprintf("%s: %v", what, err)}
	}
	return &Error{Outcome: OutcomeNetwork, Retryable: true, Message: fmt.Sprintf("%s: %v", what, err)}
}

// runIDHandles returns the values of any response header whose name contains
// "run-id" (e.g. X-Apify-Run-Id), so paid upstream work can be traced
// whatever the upstream calls the header.
func runIDHandles(h http.Header) []string {
	var out []string
	for name, vals := range h {
		if !strings.Contains(strings.ToLower(name), "run-id") {
			continue
		}
		for _, v := range vals {
			if v = strings.TrimSpace(v); v != "" {
				out = MergeHandles(out, v)
			}
		}
	}
	return out
}

// MergeHandles appends the upstream handles of more not already in list,
// keeping first-seen order: one attempt's calls, or a run's attempts, may
// report the same run or snapshot id more than once.
func MergeHandles(list []string, more ...string) []string {
	for _, v := range more {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// invalidInputTypes are the upstream error types that mean "this input is
// bad": retrying it on another offer cannot help.
var invalidInputTypes = map[string]bool{
	"invalid-input":    true,
	"invalid_input":    true,
	"validation_error": true,
}

// validationErrorsType is the error type errorBody gives a
// {"validation_errors": [...]} body: the request itself is invalid, so
// another offer or a retry cannot help.
const validationErrorsType = "validation_errors"

// statusError classifies a non-success upstream answer (section 5 of the
// design): only a 400 whose error type says the input is invalid is final.
func statusError(a *answer) *Error {
	typ, msg := errorBody(a.body)
	e := &Error{Status: a.status, Retryable: true, Handles: a.handles}
	if ra := a.header.Get("Retry-After"); ra != "" {
		e.RetryAfter = parseRetryAfter(ra, time.Now())
	}
	switch s := a.status; {
	case s == http.StatusBadRequest && typ == validationErrorsType:
		e.Outcome, e.Retryable = OutcomeInvalidInput, false
	case s == http.StatusBadRequest && invalidInputTypes[typ]:
		e.Outcome, e.Retryable = OutcomeInvalidInput, false
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		e.Outcome = OutcomeAuth
	case s == http.StatusPaymentRequired:
		e.Outcome = OutcomePayment
	case s == http.StatusRequestTimeout || s == http.StatusGatewayTimeout:
		e.Outcome = OutcomeTimeout
	case s == http.StatusTooManyRequests:
		e.Outcome = OutcomeRateLimited
	case s >= 500:
		e.Outcome = OutcomeUpstream5xx
	default:
		e.Outcome = OutcomeUpstream4xx
	}
	if typ != "" {
		msg = typ + ": " + msg
	}
	e.Message = truncate(msg)
	return e
}

// errorBody extracts the error type and message from the shapes upstreams
// use: {"error":{"type","message"}}, {"error":"…","code":"…"} or
// {"message":"…"}; other bodies are quoted as they are.
func errorBody(body []byte) (typ, msg string) {
	if !jsonscan.ValidSyntax(body) {
		return "", strings.TrimSpace(string(body))
	}
	r := jsonscan.Bytes(body)
	get := func(path ...string) string {
		v, _ := jsonscan.Lookup(r, path...)
		return strings.Clone(jsonscan.Text(v))
	}
	if v, ok := jsonscan.Lookup(r, "validation_errors"); ok && v[0] == '[' {
		// The datasets API's 400: the problems of the request, listed.
		var msgs []string
		for i := 1; ; {
			m, next, more := jsonscan.NextElem(v, i)
			if !more {
				break
			}
			msgs = append(msgs, jsonscan.Text(m))
			i = next
		}
		return validationErrorsType, strings.Join(msgs, "; ")
	}
	if e, _ := jsonscan.Lookup(r, "error"); e != "" && e[0] == '{' {
		typ, msg = get("error", "type"), get("error", "message")
	} else if e != "" && e[0] == '"' {
		msg = get("error")
	}
	if typ == "" {
		typ = get("code")
	}
	if typ == "" {
		typ = get("type")
	}
	if msg == "" {
		msg = get("message")
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
	}
	return typ, msg
}

func truncate(s string) string {
	if len(s) <= maxMessageBytes {
		return s
	}
	return s[:maxMessageBytes] + "…"
}

// parseRetryAfter reads a Retry-After value, either delay-seconds or an HTTP
// date; an unreadable or past value is zero.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs > 1e9 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// bodyBufs holds upstream body buffers between calls: a body is read once,
// split in place and normalized into fresh records, so the router hands it
// back (Result.Release) as soon as the records exist.
var bodyBufs bufpool.Pool

// maxPooledBody is the largest body read into a pooled buffer.
const maxPooledBody = 1 << 20

// readBody reads an upstream body of at most maxBodyBytes (one byte more
// tells the caller it was too large). With a Content-Length it reads into
// one buffer of that size, from bodyBufs when one is big enough (buf is
// then the pool's, for Result.Release): io.ReadAll would grow from 512
// bytes by doubling, allocating about three times a 34 KB body.
func readBody(r io.Reader, contentLength int64) (body []byte, buf *[]byte, err error) {
	r = io.LimitReader(r, maxBodyBytes+1)
	if contentLength <= 0 || contentLength > maxBodyBytes {
		return readUnknown(r)
	}
	need := int(contentLength) + 1 // +1: reach EOF (or see a longer body) in the same read loop
	if need <= maxPooledBody {
		buf = bodyBufs.Get(need)
		body = (*buf)[:need]
	} else {
		body = make([]byte, need)
	}
	n, err := io.ReadFull(r, body)
	switch {
	case err == nil:
		// Longer than announced: read on, so the caller sees what the
		// transport says about it (or the too-large check fires).
		rest, err := io.ReadAll(r)
		return append(body, rest...), nil, err
	case int64(n) == contentLength && (err == io.EOF || err == io.ErrUnexpectedEOF):
		return body[:n], buf, nil
	case err == io.EOF:
		return body[:n], nil, io.ErrUnexpectedEOF // shorter than announced
	}
	return body[:n], nil, err
}

// readUnknown reads a body of unannounced length (a chunked answer) into a
// pooled buffer grown as it fills, as io.ReadAll would grow one of its own:
// every poll answer and dataset page of a streaming upstream was a fresh
// buffer and its doublings, the garbage of thousands of calls answered at
// once. A buffer grown beyond the pool's largest class is left to the
// collector.
func readUnknown(r io.Reader) (body []byte, buf *[]byte, err error) {
	buf = bodyBufs.Get(0)
	b := *buf
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			*buf = b
			if err == io.EOF {
				err = nil
			}
			if len(b) > maxPooledBody {
				return b, nil, err
			}
			return b, buf, err
		}
	}
}

func snippet(b []byte) string {
	const n = 120
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return strconv.Quote(s[:n]) + "…"
	}
	return strconv.Quote(s)
}

// malformed is the error for a success status whose body cannot be used.
func malformed(a *answer, err error) *Error {
	return &Error{Outcome: OutcomeMalformed, Status: a.status, Retryable: true, Handles: a.handles,
		Message: fmt.Sprintf("decoding upstream body: %v", err)}
}

// withHandles returns err with extra handles recorded when it is an *Error.
func withHandles(err error, handles []string) error {
	var e *Error
	if errors.As(err, &e) {
		e.Handles = MergeHandles(append([]string(nil), handles...), e.Handles...)
	}
	return err
}

// encodeBody turns a Call body into JSON: raw JSON ([]byte,
// json.RawMessage) is sent as it is, anything else is marshalled.
func encodeBody(body any) ([]byte, error) {
	var raw []byte
	switch b := body.(type) {
	case json.RawMessage:
		raw = b
	case []byte:
		raw = b
	default:
		// A request program's tree, written without reflection where it
		// can be: json.Marshal's encoders would take this goroutine,
		// a held call's, past a 16 KiB stack (jsontree.Append).
		if raw, ok := jsontree.Append(nil, body); ok {
			return raw, nil
		}
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encoding request body: %w", err)
		}
		return raw, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("encoding request body: raw body is not valid JSON: %s", snippet(raw))
	}
	return raw, nil
}
