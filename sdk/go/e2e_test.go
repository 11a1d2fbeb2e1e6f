package sdr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdr "socialrouter/sdk/go"
)

const profileURL = "https://www.linkedin.com/in/rbranson"

// capture keeps the raw body of every answer, so the typed records can be
// compared with the JSON they were decoded from.
type capture struct {
	mu     sync.Mutex
	bodies map[string][]byte // by X-Run-Id
}

func (c *capture) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	c.mu.Lock()
	c.bodies[resp.Header.Get("X-Run-Id")] = b
	c.mu.Unlock()
	return resp, nil
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestEveryServiceTyped calls every service of the gateway's catalogue by
// its generated, named method and checks that its records decode into the
// generated record type with no field left over.
func TestEveryServiceTyped(t *testing.T) {
	e := gateway(t)
	ctx := ctxT(t)
	_, key := e.account(t, 100, nil)
	cap := &capture{bodies: map[string][]byte{}}
	c := sdr.NewClient(key, sdr.WithBaseURL(e.base), sdr.WithHTTPClient(&http.Client{Transport: cap}))
	cat, err := c.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	generated := map[string]sdr.ServiceInfo{}
	for _, s := range sdr.Services {
		generated[s.Platform+"/"+s.Service] = s
	}
	if len(cat.Data) == 0 || len(cat.Data) != len(sdr.Services) {
		t.Errorf("the catalogue has %d services, the SDK %d: run make sdk", len(cat.Data), len(sdr.Services))
	}
	extract := reflect.ValueOf(c.Extract)
	for _, entry := range cat.Data {
		name := string(entry.Platform) + "/" + entry.Service
		t.Run(name, func(t *testing.T) {
			info, ok := generated[name]
			if !ok {
				t.Fatalf("%s is in the catalogue but has no generated call: run make sdk", name)
			}
			method := extract.FieldByName(info.Group).MethodByName(info.Method)
			if !method.IsValid() {
				t.Fatalf("no method Extract.%s.%s", info.Group, info.Method)
			}
			req := reflect.New(method.Type().In(1)).Elem()
			req.FieldByName(map[string]string{"urls": "URLs", "queries": "Queries"}[info.InputField]).Set(reflect.ValueOf([]string{entry.Accepts[0].Example}))
			req.FieldByName("Limit").SetInt(3)
			out := method.Call([]reflect.Value{reflect.ValueOf(ctx), req})
			if err, _ := out[1].Interface().(error); err != nil {
				t.Fatalf("%s(%s): %v", info.Method, entry.Accepts[0].Example, err)
			}
			run := out[0].Elem()
			data := run.FieldByName("Data")
			if got := data.Type().Elem().Name(); got != info.Record || info.Record == "" {
				t.Fatalf("records typed %q, want the generated %q", got, info.Record)
			}
			if st := run.FieldByName("Status").String(); st != "completed" || data.Len() == 0 {
				t.Fatalf("status %s with %d records", st, data.Len())
			}
			if lm := run.FieldByName("Livemode").Interface().(*bool); lm == nil || *lm {
				t.Errorf("livemode %v on a test key's run, want false", lm)
			}
			// Every field of every record as answered has its typed field.
			var raw struct{ Data []json.RawMessage }
			_ = json.Unmarshal(cap.bodies[run.FieldByName("ID").String()], &raw)
			if len(raw.Data) != data.Len() {
				t.Fatalf("%d raw records, %d typed", len(raw.Data), data.Len())
			}
			for i, rec := range raw.Data {
				dec := json.NewDecoder(bytes.NewReader(rec))
				dec.DisallowUnknownFields()
				if err := dec.Decode(reflect.New(data.Type().Elem()).Interface()); err != nil {
					t.Errorf("record %d does not fit %s: %v\n%s", i, info.Record, err, rec)
				}
			}
		})
	}
}

// TestSearchCursor pages a search with its cursor (limit 1: test mode
// answers a query with the example's two records).
func TestSearchCursor(t *testing.T) {
	e := gateway(t)
	ctx := ctxT(t)
	_, key := e.account(t, 100, nil)
	c := sdr.NewClient(key, sdr.WithBaseURL(e.base))
	req := sdr.SearchRequest{Provider: "source_a/maps/place.search", Queries: []string{"coffee in Lisbon"}, Limit: 1}
	first, err := sdr.SearchAs[sdr.PlaceSearchResult](ctx, c, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != "completed" || len(first.Data) != 1 || first.Pagination.NextCursor == nil {
		t.Fatalf("first page: status %s, %d records, cursor %v", first.Status, len(first.Data), first.Pagination.NextCursor)
	}
	req.Cursor = *first.Pagination.NextCursor
	second, err := sdr.SearchAs[sdr.PlaceSearchResult](ctx, c, req)
	if err != nil {
		t.Fatal(err)
	}
	// The next page is a run of its own, billed for its records only.
	if second.Status != "completed" || len(second.Data) == 0 || second.ID == first.ID || !near(second.CreditsUsed, first.CreditsUsed*float64(len(second.Data))) {
		t.Fatalf("second page: status %s, %d records for %v credits (first: 1 for %v), id %s", second.Status, len(second.Data), second.CreditsUsed, first.CreditsUsed, second.ID)
	}
	if reflect.DeepEqual(first.Data[0], second.Data[0]) {
		t.Errorf("the second page repeats the first: %+v", second.Data[0])
	}
}

// TestAsyncThousand submits a 1,000-record run, waits for it and iterates
// over its records; the balance goes down by the run's charge. Test mode
// gives photo_net/profile.info one record per input (records_per_input),
// so the run has 1,000 inputs; its last is sdr-test-slow, which keeps the
// run running for 5 s, so that Wait polls.
func TestAsyncThousand(t *testing.T) {
	e := gateway(t)
	ctx := ctxT(t)
	_, key := e.account(t, 100, nil)
	c := sdr.NewClient(key, sdr.WithBaseURL(e.base))
	before := balance(t, c)
	urls := make([]string, 0, 1000)
	for i := range 999 {
		urls = append(urls, fmt.Sprintf("https://www.instagram.com/user_%d", i))
	}
	urls = append(urls, "https://www.instagram.com/nasa?sdr-test-slow")
	h, err := c.Extract.PhotoNet.ProfileInfoAsync(ctx, sdr.PhotoNetProfileInfoRequest{URLs: urls, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h.ID, "ext_") || h.Run.Status != "running" {
		t.Fatalf("submitted: id %q status %q", h.ID, h.Run.Status)
	}
	submitted := time.Now()
	h.PollInterval = 100 * time.Millisecond
	run, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "completed" || run.Pagination.Total != 1000 || time.Since(submitted) < 4*time.Second {
		t.Fatalf("status %s, total %d after %v", run.Status, run.Pagination.Total, time.Since(submitted))
	}
	n := 0
	for rec, err := range h.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if rec.Source == nil || *rec.Source != sdr.PlatformPhotoNet {
			t.Fatalf("record %d: source %v", n, rec.Source)
		}
	}
	if n != 1000 {
		t.Fatalf("iterated %d records, want 1000", n)
	}
	if after := balance(t, c); !near(before-after, run.CreditsUsed) || run.CreditsUsed <= 0 {
		t.Errorf("balance %v → %v, run charged %v", before, after, run.CreditsUsed)
	}
}

// TestCancel cancels a run sdr-test-slow holds, which then charges
// nothing; cancelling it again is 409 run_finished, and its records are
// 409 run_not_finished while it runs.
func TestCancel(t *testing.T) {
	e := gateway(t)
	ctx := ctxT(t)
	_, key := e.account(t, 100, nil)
	c := sdr.NewClient(key, sdr.WithBaseURL(e.base))
	before := balance(t, c)
	h, err := c.Extract.ProNet.ProfileInfoAsync(ctx, sdr.ProNetProfileInfoRequest{URL: magicSlow})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Page(ctx, 10, "")
	expectCode(t, err, 409, "run_not_finished")
	run, err := h.Cancel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "cancelled" || run.CreditsUsed != 0 {
		t.Fatalf("after cancel: status %s, credits_used %v", run.Status, run.CreditsUsed)
	}
	_, err = h.Cancel(ctx)
	expectCode(t, err, 409, "run_finished")
	if after := balance(t, c); after != before {
		t.Errorf("balance %v → %v for a cancelled run", before, after)
	}
}

// TestDroppedConnectionChargedOnce calls through a proxy that drops the
// first connection after the gateway got the call: the client retries
// with the same Idempotency-Key, gets the run, and is charged once.
func TestDroppedConnectionChargedOnce(t *testing.T) {
	e := gateway(t)
	ctx := ctxT(t)
	if e.flaky == "" {
		t.Fatal("SDR_FLAKY_URL not set")
	}
	_, key := e.account(t, 100, nil)
	c := sdr.NewClient(key, sdr.WithBaseURL(e.flaky), sdr.WithBackoff(50*time.Millisecond))
	before := balance(t, c)
	ikey := "sdk-go-drop-" + time.Now().Format("150405.000000")
	run, err := c.Extract.ProNet.ProfileInfo(ctx, sdr.ProNetProfileInfoRequest{URL: profileURL}, sdr.WithIdempotencyKey(ikey))
	if err != nil {
		t.Fatal(err)
	}
	var log []struct {
		Key     string
		Dropped bool
	}
	e.call(t, "GET", e.flaky+"/_flaky/log", nil, &log)
	var tries []bool
	for _, l := range log {
		if l.Key == ikey {
			tries = append(tries, l.Dropped)
		}
	}
	if !reflect.DeepEqual(tries, []bool{true, false}) {
		t.Fatalf("attempts with the key (dropped?): %v, want a dropped one and its retry", tries)
	}
	after := balance(t, c) // the test balance: the key is a test key
	if run.Livemode == nil || *run.Livemode {
		t.Fatalf("livemode %v: the balance checked is not the test balance", run.Livemode)
	}
	if run.CreditsUsed <= 0 || !near(before-after, run.CreditsUsed) {
		t.Errorf("balance %v → %v, the run charged %v: charged more than once?", before, after, run.CreditsUsed)
	}
	// Without a key of its own the client still sends one: a dropped call
	// is retried and charged once.
	again, err := c.Extract.ProNet.ProfileInfo(ctx, sdr.ProNetProfileInfoRequest{URL: profileURL})
	if err != nil {
		t.Fatal(err)
	}
	if final := balance(t, c); !near(after-final, again.CreditsUsed) {
		t.Errorf("balance %v → %v, the run charged %v", after, final, again.CreditsUsed)
	}
}

func balance(t *testing.T, c *sdr.Client) float64 {
	t.Helper()
	b, err := c.Balance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return b.Balance
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// expectCode checks that err is an *sdr.APIError with this status and code.
func expectCode(t *testing.T, err error, status int, code string) *sdr.APIError {
	t.Helper()
	var e *sdr.APIError
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want *sdr.APIError %d %s", err, err, status, code)
	}
	if e.Status != status || e.Code != code || e.Type == "" || e.Message == "" {
		t.Fatalf("got %d %s (%s): %s, want %d %s", e.Status, e.Code, e.Type, e.Message, status, code)
	}
	return e
}

// TestWebhookVerified registers an endpoint of the account's test twin
// (test runs' events go to test endpoints only), runs an async call and
// verifies the gateway's delivery; a tampered copy is refused.
func TestWebhookVerified(t *testing.T) {
	e := gateway(t)
	ctx := ctxT(t)
	id, key := e.account(t, 100, nil)
	type delivery struct {
		h    http.Header
		body []byte
	}
	got := make(chan delivery, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), b}
	}))
	defer srv.Close()
	var ep struct{ Secret string }
	e.adminJSON(t, "POST", "/sdr/accounts/"+id+"/webhooks", map[string]any{"url": srv.URL + "/hooks", "events": []string{"run.completed"}}, &ep)
	wh, err := sdr.NewWebhook(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	c := sdr.NewClient(key, sdr.WithBaseURL(e.base))
	h, err := c.Extract.ProNet.ProfileInfoAsync(ctx, sdr.ProNetProfileInfoRequest{URL: profileURL})
	if err != nil {
		t.Fatal(err)
	}
	var d delivery
	select {
	case d = <-got:
	case <-ctx.Done():
		t.Fatal("no delivery")
	}
	ev, err := wh.Verify(d.h, d.body)
	if err != nil {
		t.Fatalf("the gateway's delivery does not verify: %v", err)
	}
	run, err := ev.Run()
	if err != nil || ev.Type != "run.completed" || run.ID != h.ID || ev.ID == "" || run.Livemode == nil || *run.Livemode {
		t.Fatalf("event %s id %q for run %v (%v), want run.completed of %s", ev.Type, ev.ID, run, err, h.ID)
	}
	tampered := bytes.Replace(d.body, []byte(`"completed"`), []byte(`"cancelled"`), 1)
	if bytes.Equal(tampered, d.body) {
		t.Fatal("nothing to tamper with")
	}
	if _, err := wh.Verify(d.h, tampered); !errors.Is(err, sdr.ErrWebhookSignature) {
		t.Errorf("a tampered body: %v, want ErrWebhookSignature", err)
	}
	other, _ := sdr.NewWebhook("whsec_" + "c2VjcmV0LW9mLWFub3RoZXItZW5kcG9pbnQ=")
	if _, err := other.Verify(d.h, d.body); !errors.Is(err, sdr.ErrWebhookSignature) {
		t.Errorf("another endpoint's secret: %v, want ErrWebhookSignature", err)
	}
}
