package webhooks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// receiver records what it is sent and answers the next queued status
// (200 when the queue is empty).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []received
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), b})
		st := http.StatusOK
		if len(r.statuses) > 0 {
			st, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		if st >= 300 && st < 400 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(st)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

type env struct {
	svc   *Service
	store store.Store
	clock *clock
}

func newEnv(t *testing.T, allowPrivate bool) *env {
	t.Helper()
	st, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateAccount(t.Context(), "acme", 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateAccount(t.Context(), "other", 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now().UTC().Truncate(time.Second)}
	svc := New(Config{Store: st, AllowPrivate: allowPrivate, Now: c.now, Jitter: func(d time.Duration) time.Duration { return d }})
	return &env{svc: svc, store: st, clock: c}
}

func TestSecretFormat(t *testing.T) {
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if !strings.HasPrefix(s, "whsec_") || err != nil || len(raw) < 24 {
		t.Errorf("secret %q: want whsec_ and base64 of at least 24 bytes (%d, %v)", s, len(raw), err)
	}
	if s2, _ := NewSecret(); s2 == s {
		t.Error("two secrets are equal")
	}
}

// TestSignatureVerifiesWithReferenceLibrary signs with one and with two
// secrets and checks each with the Standard Webhooks Go library.
func TestSignatureVerifiesWithReferenceLibrary(t *testing.T) {
	a, _ := NewSecret()
	b, _ := NewSecret()
	body := []byte(`{"type":"run.completed","timestamp":"2026-01-02T03:04:05Z","data":{"id":"ext_1"}}`)
	at := time.Now()
	sig, err := Sign([]string{a, b}, "msg_1", at, body)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(sig)); n != 2 || !strings.HasPrefix(sig, "v1,") {
		t.Fatalf("signature %q: want two space-separated v1 signatures", sig)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_1")
	h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	h.Set("webhook-signature", sig)
	for _, secret := range []string{a, b} {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("reference library refuses the signature: %v", err)
		}
		if err := wh.Verify(append(body, ' '), h); err == nil {
			t.Error("reference library accepts a changed body")
		}
	}
	other, _ := NewSecret()
	wh, _ := standardwebhooks.NewWebhook(other)
	if err := wh.Verify(body, h); err == nil {
		t.Error("a third secret verifies")
	}
}

func TestCreateRefusesPrivateAndBadInput(t *testing.T) {
	e := newEnv(t, false)
	e.svc.guard.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("192.168.0.10")}, nil
	}
	for _, tc := range []struct {
		account, url string
		events       []string
		want         error
	}{
		{"acme", "https://intranet.example/hook", []string{EventRunCompleted}, ErrInvalidURL},
		{"acme", "http://93.184.215.14/hook", []string{EventRunCompleted}, ErrInvalidURL},
		{"acme", "https://93.184.215.14/hook", nil, ErrInvalidEvents},
		{"acme", "https://93.184.215.14/hook", []string{"run.started"}, ErrInvalidEvents},
		{"acme", "https://93.184.215.14/hook", []string{EventRunFailed, EventRunFailed}, ErrInvalidEvents},
		{"nobody", "https://93.184.215.14/hook", []string{EventRunFailed}, store.ErrNotFound},
	} {
		if _, err := e.svc.Create(t.Context(), tc.account, tc.url, tc.events); !errors.Is(err, tc.want) {
			t.Errorf("Create(%s, %s, %v) = %v, want %v", tc.account, tc.url, tc.events, err, tc.want)
		}
	}
	ep, err := e.svc.Create(t.Context(), "acme", "https://93.184.215.14/hook", []string{EventRunFailed, EventRunCompleted})
	if err != nil {
		t.Fatalf("Create(public literal): %v", err)
	}
	if !strings.HasPrefix(ep.ID, "wh_") || !strings.HasPrefix(ep.Secret, "whsec_") || !slices.Equal(ep.Events, []string{EventRunCompleted, EventRunFailed}) {
		t.Errorf("created %+v", ep)
	}
}

// TestRetriesSameIDThenSucceeds answers 500 twice: the third attempt
// succeeds, every attempt carries the same webhook-id and body, a fresh
// timestamp and a signature the reference library accepts; the retries
// follow the schedule.
func TestRetriesSameIDThenSucceeds(t *testing.T) {
	e := newEnv(t, true)
	rcv := newReceiver(t, 500, 503)
	ep, err := e.svc.Create(t.Context(), "acme", rcv.URL+"/hook", []string{EventRunCompleted})
	if err != nil {
		t.Fatal(err)
	}
	run := []byte(`{"id":"ext_1","status":"completed"}`)
	if err := e.svc.Notify(t.Context(), "acme", EventRunCompleted, run); err != nil {
		t.Fatal(err)
	}
	// Attempt 1 now; attempt 2 only after 5 s; attempt 3 after 5 min more.
	steps := []struct {
		advance  time.Duration
		received int
	}{
		{0, 1}, {4 * time.Second, 1}, {time.Second, 2}, {4 * time.Minute, 2}, {time.Minute, 3}, {24 * time.Hour, 3},
	}
	for i, st := range steps {
		e.clock.add(st.advance)
		if _, err := e.svc.RunDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := len(rcv.all()); n != st.received {
			t.Fatalf("step %d: receiver got %d requests, want %d", i, n, st.received)
		}
	}
	got := rcv.all()
	wh, _ := standardwebhooks.NewWebhookRaw(mustDecode(t, ep.Secret))
	for i, r := range got {
		if r.header.Get("webhook-id") != got[0].header.Get("webhook-id") || !strings.HasPrefix(r.header.Get("webhook-id"), "msg_") {
			t.Errorf("attempt %d webhook-id %q, want %q", i+1, r.header.Get("webhook-id"), got[0].header.Get("webhook-id"))
		}
		if string(r.body) != string(got[0].body) {
			t.Errorf("attempt %d body differs", i+1)
		}
		if err := wh.VerifyIgnoringTimestamp(r.body, r.header); err != nil {
			t.Errorf("attempt %d: %v", i+1, err)
		}
		if r.header.Get("Content-Type") != "application/json" {
			t.Errorf("attempt %d content type %q", i+1, r.header.Get("Content-Type"))
		}
	}
	if got[0].header.Get("webhook-timestamp") == got[2].header.Get("webhook-timestamp") {
		t.Error("a retry kept the first attempt's timestamp; it is the attempt's time")
	}
	var payload struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(got[0].body, &payload); err != nil || payload.Type != EventRunCompleted || string(payload.Data) != string(run) || payload.Timestamp.IsZero() {
		t.Errorf("payload %s (%v)", got[0].body, err)
	}
	ds, _ := e.svc.Deliveries(t.Context(), "acme", "", 10)
	if len(ds) != 1 || ds[0].Status != store.DeliverySucceeded || ds[0].Attempts != 3 || ds[0].LastStatusCode != 200 {
		t.Errorf("delivery log = %+v", ds)
	}
}

func mustDecode(t *testing.T, secret string) []byte {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScheduleSpansADay fails every attempt: the delivery fails for good
// only after the whole schedule, which spans more than 24 hours.
func TestScheduleSpansADay(t *testing.T) {
	var total time.Duration
	for _, d := range DefaultSchedule {
		total += d
	}
	if total < 24*time.Hour {
		t.Fatalf("DefaultSchedule spans %v, want at least 24h", total)
	}
	e := newEnv(t, true)
	rcv := newReceiver(t, slices.Repeat([]int{500}, 20)...)
	if _, err := e.svc.Create(t.Context(), "acme", rcv.URL, []string{EventRunFailed}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Notify(t.Context(), "acme", EventRunFailed, []byte(`{"id":"ext_2"}`)); err != nil {
		t.Fatal(err)
	}
	start := e.clock.now()
	var last time.Time
	for range 200 {
		if n, _ := e.svc.RunDue(t.Context()); n > 0 {
			last = e.clock.now()
		}
		e.clock.add(10 * time.Minute)
	}
	if n := len(rcv.all()); n != len(DefaultSchedule)+1 {
		t.Errorf("%d attempts, want %d", n, len(DefaultSchedule)+1)
	}
	if span := last.Sub(start); span < 24*time.Hour {
		t.Errorf("last attempt %v after the first, want at least 24h", span)
	}
	ds, _ := e.svc.Deliveries(t.Context(), "acme", "", 10)
	if len(ds) != 1 || ds[0].Status != store.DeliveryFailed || ds[0].LastStatusCode != 500 {
		t.Errorf("delivery log = %+v", ds)
	}
}

func TestJitterStaysNear(t *testing.T) {
	for range 100 {
		if d := jitter(time.Hour); d < 54*time.Minute || d > 66*time.Minute {
			t.Fatalf("jitter(1h) = %v, want within 10%%", d)
		}
	}
}

// TestGoneDisablesAndRedirectIsFailure: a 410 disables the endpoint (no
// retry, and later events skip it); a 3xx is a failure, not followed.
func TestGoneDisablesAndRedirectIsFailure(t *testing.T) {
	e := newEnv(t, true)
	gone := newReceiver(t, http.StatusGone)
	moved := newReceiver(t, http.StatusFound)
	epGone, _ := e.svc.Create(t.Context(), "acme", gone.URL, []string{EventRunCompleted})
	if _, err := e.svc.Create(t.Context(), "acme", moved.URL, []string{EventRunCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Notify(t.Context(), "acme", EventRunCompleted, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if n, err := e.svc.RunDue(t.Context()); n != 2 || err != nil {
		t.Fatalf("RunDue = %d, %v", n, err)
	}
	if got := moved.all(); len(got) != 1 {
		t.Errorf("redirecting receiver got %d requests, want 1 (the redirect not followed)", len(got))
	}
	g, _ := e.svc.Get(t.Context(), epGone.ID)
	if g.DisabledAt == nil {
		t.Error("410 did not disable the endpoint")
	}
	ds, _ := e.svc.Deliveries(t.Context(), "acme", "", 10)
	for _, d := range ds {
		switch d.EndpointID {
		case epGone.ID:
			if d.Status != store.DeliveryFailed || d.LastStatusCode != 410 {
				t.Errorf("410 delivery = %+v, want failed", d)
			}
		default:
			if d.Status != store.DeliveryPending || d.LastStatusCode != 302 {
				t.Errorf("302 delivery = %+v, want pending retry", d)
			}
		}
	}
	if err := e.svc.Notify(t.Context(), "acme", EventRunCompleted, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	ds, _ = e.svc.Deliveries(t.Context(), "acme", epGone.ID, 10)
	if len(ds) != 1 {
		t.Errorf("a disabled endpoint got %d deliveries, want only the first", len(ds))
	}
}

// TestDialTimeGuard: an endpoint stored with a name that later resolves
// to a private address (DNS rebinding) is refused when the worker dials.
func TestDialTimeGuard(t *testing.T) {
	e := newEnv(t, false)
	rcv := newReceiver(t)
	ep := store.WebhookEndpoint{ID: "wh_rebound", AccountID: "acme", URL: rcv.URL, Events: []string{EventRunCompleted},
		Secret: "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 24)), CreatedAt: e.clock.now()}
	if err := e.store.CreateWebhook(t.Context(), ep); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Notify(t.Context(), "acme", EventRunCompleted, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RunDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.all()); n != 0 {
		t.Fatalf("the receiver on 127.0.0.1 got %d requests", n)
	}
	ds, _ := e.svc.Deliveries(t.Context(), "acme", "", 1)
	if len(ds) != 1 || ds[0].Status != store.DeliveryPending || !strings.Contains(ds[0].LastError, "not a public address") {
		t.Errorf("delivery = %+v, want a refused attempt", ds)
	}
}

func TestNotifyOnlySubscribedAndOwnAccount(t *testing.T) {
	e := newEnv(t, true)
	rcv := newReceiver(t)
	a, _ := e.svc.Create(t.Context(), "acme", rcv.URL+"/a", []string{EventRunCompleted})
	b, _ := e.svc.Create(t.Context(), "acme", rcv.URL+"/b", []string{EventRunFailed, EventRunCancelled})
	c, _ := e.svc.Create(t.Context(), "acme", rcv.URL+"/c", Events)
	if _, err := e.svc.Create(t.Context(), "other", rcv.URL+"/o", Events); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Notify(t.Context(), "acme", EventRunCancelled, []byte(`{"id":"ext_9"}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Notify(t.Context(), "acme", "run.started", []byte(`{}`)); !errors.Is(err, ErrInvalidEvents) {
		t.Errorf("Notify(unknown event) = %v", err)
	}
	if err := e.svc.Notify(t.Context(), "acme", EventRunFailed, []byte(`{not json`)); err == nil {
		t.Error("Notify with a run that is not JSON succeeded")
	}
	ds, _ := e.svc.Deliveries(t.Context(), "acme", "", 10)
	var eps []string
	for _, d := range ds {
		eps = append(eps, d.EndpointID)
	}
	slices.Sort(eps)
	want := []string{b.ID, c.ID}
	slices.Sort(want)
	if !slices.Equal(eps, want) {
		t.Errorf("deliveries to %v, want %v (not %s)", eps, want, a.ID)
	}
	if ds, _ := e.svc.Deliveries(t.Context(), "other", "", 10); len(ds) != 0 {
		t.Errorf("another account got %d deliveries", len(ds))
	}
}

// TestRotateSignsWithBothSecrets: after a rotation a delivery verifies
// with the old and the new secret, until the grace period ends.
func TestRotateSignsWithBothSecrets(t *testing.T) {
	e := newEnv(t, true)
	rcv := newReceiver(t)
	ep, _ := e.svc.Create(t.Context(), "acme", rcv.URL, Events)
	rotated, err := e.svc.Rotate(t.Context(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Secret == ep.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Fatalf("rotated secret %q", rotated.Secret)
	}
	if _, err := e.svc.SendTest(t.Context(), ep.ID); err != nil {
		t.Fatal(err)
	}
	e.svc.RunDue(t.Context())
	e.clock.add(RotationGrace + time.Second)
	if _, err := e.svc.SendTest(t.Context(), ep.ID); err != nil {
		t.Fatal(err)
	}
	e.svc.RunDue(t.Context())
	got := rcv.all()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	oldWH, _ := standardwebhooks.NewWebhookRaw(mustDecode(t, ep.Secret))
	newWH, _ := standardwebhooks.NewWebhookRaw(mustDecode(t, rotated.Secret))
	if oldWH.VerifyIgnoringTimestamp(got[0].body, got[0].header) != nil || newWH.VerifyIgnoringTimestamp(got[0].body, got[0].header) != nil {
		t.Errorf("during the grace period both secrets must verify: %q", got[0].header.Get("webhook-signature"))
	}
	if oldWH.VerifyIgnoringTimestamp(got[1].body, got[1].header) == nil || newWH.VerifyIgnoringTimestamp(got[1].body, got[1].header) != nil {
		t.Errorf("after the grace period only the new secret must verify: %q", got[1].header.Get("webhook-signature"))
	}
	var p struct{ Type string }
	json.Unmarshal(got[0].body, &p)
	if p.Type != EventTest {
		t.Errorf("test event type %q, want %q", p.Type, EventTest)
	}
}

func TestResendAfterFailure(t *testing.T) {
	e := newEnv(t, true)
	e.svc.schedule = []time.Duration{time.Second}
	rcv := newReceiver(t, 500, 500)
	ep, _ := e.svc.Create(t.Context(), "acme", rcv.URL, Events)
	d, _ := e.svc.SendTest(t.Context(), ep.ID)
	e.svc.RunDue(t.Context())
	e.clock.add(time.Second)
	e.svc.RunDue(t.Context())
	if got, _ := e.svc.store.GetDelivery(t.Context(), d.ID); got.Status != store.DeliveryFailed || got.Attempts != 2 {
		t.Fatalf("after the schedule = %+v, want failed after 2 attempts", got)
	}
	if _, err := e.svc.Resend(t.Context(), d.ID); err != nil {
		t.Fatal(err)
	}
	e.svc.RunDue(t.Context())
	got, _ := e.svc.store.GetDelivery(t.Context(), d.ID)
	if got.Status != store.DeliverySucceeded || got.Attempts != 3 {
		t.Errorf("after resend = %+v, want succeeded at attempt 3", got)
	}
	all := rcv.all()
	if len(all) != 3 || all[2].header.Get("webhook-id") != d.ID {
		t.Errorf("resend sent %d requests, last webhook-id %q, want %s", len(all), all[len(all)-1].header.Get("webhook-id"), d.ID)
	}
}

// TestWorkerDelivers runs the background worker with the real clock: a
// Notify is delivered without calling RunDue.
func TestWorkerDelivers(t *testing.T) {
	e := newEnv(t, true)
	e.svc.now = time.Now
	rcv := newReceiver(t)
	if _, err := e.svc.Create(t.Context(), "acme", rcv.URL, Events); err != nil {
		t.Fatal(err)
	}
	e.svc.Start()
	defer e.svc.Stop()
	if err := e.svc.Notify(t.Context(), "acme", EventRunCompleted, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(rcv.all()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(rcv.all()) != 1 {
		t.Fatalf("worker delivered %d, want 1", len(rcv.all()))
	}
}

// TestPruneKeepsTheLogForARetention: a finished delivery stays in the log
// for Retention after its last attempt, then Prune deletes it.
func TestPruneKeepsTheLogForARetention(t *testing.T) {
	e := newEnv(t, true)
	rcv := newReceiver(t)
	ep, _ := e.svc.Create(t.Context(), "acme", rcv.URL, Events)
	if _, err := e.svc.SendTest(t.Context(), ep.ID); err != nil {
		t.Fatal(err)
	}
	e.svc.RunDue(t.Context())
	e.clock.add(DefaultRetention - time.Minute)
	if n, err := e.svc.Prune(t.Context()); n != 0 || err != nil {
		t.Errorf("Prune before the retention = %d, %v", n, err)
	}
	e.clock.add(2 * time.Minute)
	if n, err := e.svc.Prune(t.Context()); n != 1 || err != nil {
		t.Errorf("Prune after the retention = %d, %v; want 1", n, err)
	}
	if ds, _ := e.svc.Deliveries(t.Context(), "acme", "", 10); len(ds) != 0 {
		t.Errorf("log after prune: %+v", ds)
	}
}

// TestNotifyTwiceForOneRunQueuesOnce: a run's event notified again (the
// async runs resuming after a restart, say) keeps its one delivery per
// endpoint, under the same webhook-id; another run, or another event of
// the run, is a delivery of its own.
func TestNotifyTwiceForOneRunQueuesOnce(t *testing.T) {
	e := newEnv(t, true)
	rcv := newReceiver(t)
	a, _ := e.svc.Create(t.Context(), "acme", rcv.URL+"/a", Events)
	b, _ := e.svc.Create(t.Context(), "acme", rcv.URL+"/b", []string{EventRunCompleted})
	for range 2 {
		if err := e.svc.Notify(t.Context(), "acme", EventRunCompleted, []byte(`{"id":"ext_1","status":"completed"}`)); err != nil {
			t.Fatal(err)
		}
	}
	ds, _ := e.svc.Deliveries(t.Context(), "acme", "", 10)
	if len(ds) != 2 {
		t.Fatalf("%d deliveries after notifying one run twice, want 2 (one per endpoint)", len(ds))
	}
	if ds[0].ID == ds[1].ID {
		t.Errorf("two endpoints share the webhook-id %s", ds[0].ID)
	}
	// A third endpoint registered since: the repeat reaches it, once.
	c, _ := e.svc.Create(t.Context(), "acme", rcv.URL+"/c", Events)
	if err := e.svc.Notify(t.Context(), "acme", EventRunCompleted, []byte(`{"id":"ext_1","status":"completed"}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Notify(t.Context(), "acme", EventRunFailed, []byte(`{"id":"ext_1","status":"failed"}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Notify(t.Context(), "acme", EventRunCompleted, []byte(`{"id":"ext_2","status":"completed"}`)); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	ds, _ = e.svc.Deliveries(t.Context(), "acme", "", 20)
	for _, d := range ds {
		count[d.EndpointID]++
	}
	if count[a.ID] != 3 || count[b.ID] != 2 || count[c.ID] != 3 {
		t.Errorf("deliveries per endpoint a %d b %d c %d, want 3 2 3", count[a.ID], count[b.ID], count[c.ID])
	}
}

// TestNotifyLargeRunIsThin: a run over MaxEventData is sent without its
// records (data), flagged, so a delivery stays small; the receiver pages
// the records from the API.
func TestNotifyLargeRunIsThin(t *testing.T) {
	e := newEnv(t, true)
	rcv := newReceiver(t)
	if _, err := e.svc.Create(t.Context(), "acme", rcv.URL, Events); err != nil {
		t.Fatal(err)
	}
	big := `{"id":"ext_big","status":"completed","data":[` + strings.Repeat(`{"name":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},`, MaxEventData/40) + `{}],"pagination":{"total":1}}`
	if err := e.svc.Notify(t.Context(), "acme", EventRunCompleted, []byte(big)); err != nil {
		t.Fatal(err)
	}
	e.svc.RunDue(t.Context())
	got := rcv.all()
	if len(got) != 1 {
		t.Fatalf("%d deliveries", len(got))
	}
	if len(got[0].body) > MaxEventData {
		t.Errorf("delivery of %d bytes, want at most %d", len(got[0].body), MaxEventData)
	}
	var p struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(got[0].body, &p); err != nil {
		t.Fatal(err)
	}
	if string(p.Data["id"]) != `"ext_big"` || p.Data["data"] != nil || string(p.Data["data_omitted"]) != "true" || string(p.Data["pagination"]) != `{"total":1}` {
		t.Errorf("thin run = %s", got[0].body)
	}
}

// TestObserveOutcomes: the observer hears every attempt's outcome.
func TestObserveOutcomes(t *testing.T) {
	e := newEnv(t, true)
	var mu sync.Mutex
	var outcomes []string
	e.svc.observe = func(outcome string, _ time.Duration) { mu.Lock(); outcomes = append(outcomes, outcome); mu.Unlock() }
	e.svc.schedule = []time.Duration{time.Second}
	rcv := newReceiver(t, 500, 500, 200, 410)
	ep, _ := e.svc.Create(t.Context(), "acme", rcv.URL, Events)
	for range 3 {
		e.svc.SendTest(t.Context(), ep.ID)
		e.svc.RunDue(t.Context())
		e.clock.add(time.Second)
		e.svc.RunDue(t.Context())
	}
	if want := []string{"retry", "failed", "succeeded", "gone"}; !slices.Equal(outcomes, want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
}

// TestDeliveryOfDeletedEndpointFinishes: a delivery whose endpoint is gone
// (queued while it was being deleted) is finished as failed, not claimed
// again and again.
func TestDeliveryOfDeletedEndpointFinishes(t *testing.T) {
	e := newEnv(t, true)
	now := e.clock.now()
	d := store.WebhookDelivery{ID: "msg_orphan", EndpointID: "wh_gone", AccountID: "acme", Event: EventRunCompleted,
		Payload: []byte(`{}`), Status: store.DeliveryPending, NextAt: now, CreatedAt: now}
	if err := e.store.EnqueueDeliveries(t.Context(), []store.WebhookDelivery{d}); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.svc.RunDue(t.Context()); n != 1 {
		t.Fatalf("RunDue = %d", n)
	}
	got, _ := e.store.GetDelivery(t.Context(), "msg_orphan")
	if got.Status != store.DeliveryFailed || !strings.Contains(got.LastError, "deleted") {
		t.Errorf("orphan delivery = %+v, want failed", got)
	}
}
