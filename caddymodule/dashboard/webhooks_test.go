package dashboard

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/webhooks"
)

// withWebhooks serves the env's dashboard again with a webhook service
// (allowing the loopback receivers of tests) and returns the env on it.
func withWebhooks(t *testing.T, e *env) (*env, *webhooks.Service) {
	t.Helper()
	svc := webhooks.New(webhooks.Config{Store: e.store, AllowPrivate: true, Now: e.clock.now,
		Schedule: []time.Duration{time.Minute}, Jitter: func(d time.Duration) time.Duration { return d }})
	r := testRegistry(t)
	as := &oauth.Server{Store: e.store, KeyPrefix: "sdr", Now: e.clock.now}
	h := New(Config{Store: e.store, Registry: func() *registry.Registry { return r }, KeyPrefix: "sdr", Now: e.clock.now, OAuth: as, Webhooks: svc})
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{t: t, store: e.store, clock: e.clock, srv: srv}, svc
}

var (
	whsecRE = regexp.MustCompile(`value="(whsec_[^"]+)"`)
	csrfRE  = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
)

func TestWebhooksPage(t *testing.T) {
	e, svc := withWebhooks(t, newEnv(t, false))
	var status atomic.Int32
	status.Store(500)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer rcv.Close()

	b := e.member("acme", "alice@example.com")
	p := b.get("/dashboard/webhooks")
	want(t, p, http.StatusOK, "No endpoints yet", "run.completed", "run.cancelled")
	csrf := csrfRE.FindStringSubmatch(p.body)
	if csrf == nil {
		t.Fatalf("no csrf input:\n%s", p.body)
	}
	form := func(kv ...string) url.Values {
		v := url.Values{"csrf": {csrf[1]}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	want(t, b.post("/dashboard/webhooks", url.Values{"url": {rcv.URL}, "events": {"run.completed"}}), http.StatusForbidden, "Form expired")
	want(t, b.post("/dashboard/webhooks", form("url", rcv.URL)), http.StatusBadRequest, "invalid webhook events")
	want(t, b.post("/dashboard/webhooks", form("url", "ftp://x", "events", "run.failed")), http.StatusBadRequest, "http or https")

	p = b.post("/dashboard/webhooks", form("url", rcv.URL+"/hook", "events", "run.completed", "events", "run.failed"))
	want(t, p, http.StatusCreated, "you will not see it again", rcv.URL+"/hook")
	if p.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", p.header.Get("Cache-Control"))
	}
	secret := whsecRE.FindStringSubmatch(p.body)
	if secret == nil {
		t.Fatalf("no secret on the page:\n%s", p.body)
	}
	secret[1] = html.UnescapeString(secret[1]) // html/template writes + as &#43;
	eps, _ := svc.List(t.Context(), "acme")
	if len(eps) != 1 || eps[0].Secret != secret[1] {
		t.Fatalf("stored endpoints %+v", eps)
	}
	ep := eps[0]
	list := b.get("/dashboard/webhooks")
	if strings.Contains(list.body, secret[1]) {
		t.Error("the page shows the secret again")
	}

	// Send a test event: the receiver answers 500, the log shows a retry.
	if p = b.post("/dashboard/webhooks/"+ep.ID+"/test", form()); p.status != http.StatusSeeOther {
		t.Fatalf("test event: %d %s", p.status, p.body)
	}
	svc.RunDue(t.Context())
	want(t, b.get("/dashboard/webhooks"), http.StatusOK, "webhook.test", "retrying", ">500<", "Next retry")
	ds, _ := svc.Deliveries(t.Context(), "acme", "", 10)
	if len(ds) != 1 || ds[0].Attempts != 1 || ds[0].Status != store.DeliveryPending {
		t.Fatalf("deliveries %+v", ds)
	}
	status.Store(200)
	if p = b.post("/dashboard/webhooks/deliveries/"+ds[0].ID+"/resend", form()); p.status != http.StatusSeeOther {
		t.Fatalf("resend: %d %s", p.status, p.body)
	}
	svc.RunDue(t.Context())
	want(t, b.get("/dashboard/webhooks"), http.StatusOK, "delivered", ">2<", ">200<")

	p = b.post("/dashboard/webhooks/"+ep.ID+"/rotate", form())
	want(t, p, http.StatusOK, "you will not see it again")
	if s2 := whsecRE.FindStringSubmatch(p.body); s2 == nil || html.UnescapeString(s2[1]) == secret[1] {
		t.Errorf("rotate showed no new secret")
	}

	// Another account's member sees none of it and cannot act on it.
	o := e.member("other", "olga@example.com")
	op := o.get("/dashboard/webhooks")
	if strings.Contains(op.body, ep.ID) || strings.Contains(op.body, rcv.URL) {
		t.Error("another account sees the endpoint")
	}
	ocsrf := csrfRE.FindStringSubmatch(op.body)[1]
	for _, path := range []string{"/webhooks/" + ep.ID + "/test", "/webhooks/" + ep.ID + "/rotate", "/webhooks/" + ep.ID + "/delete", "/webhooks/deliveries/" + ds[0].ID + "/resend"} {
		want(t, o.post("/dashboard"+path, url.Values{"csrf": {ocsrf}}), http.StatusNotFound)
	}

	if p = b.post("/dashboard/webhooks/"+ep.ID+"/delete", form()); p.status != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", p.status, p.body)
	}
	if eps, _ := svc.List(t.Context(), "acme"); len(eps) != 0 {
		t.Errorf("endpoints after delete: %+v", eps)
	}
	want(t, b.get("/dashboard/activity"), http.StatusOK, "webhook_created", "webhook_rotated", "webhook_deleted")
}
