package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/webhooks"
)

// TestWebhookRoutes walks an endpoint through the admin API: create (the
// secret once), list (no secret), test event, rotate, delivery log,
// resend, delete; and the refusals.
func TestWebhookRoutes(t *testing.T) {
	got := make(chan *http.Request, 10)
	bodies := make(chan []byte, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, r.ContentLength)
		r.Body.Read(b)
		got <- r
		bodies <- b
	}))
	defer rcv.Close()

	h, _ := newTestHandler(t)
	svc := webhooks.New(webhooks.Config{Store: h.Store.(store.Store), AllowPrivate: true})
	h = New(Config{Store: h.Store, Registry: h.Registry, KeyPrefix: "sdr", Webhooks: svc,
		SetSourceOverride: h.SetSourceOverride, SourceStatus: h.SourceStatus})
	svc.Start()
	defer svc.Stop()
	if st, body, _ := serve(t, h, "POST", "/sdr/accounts", `{"id": "acme"}`); st != 201 {
		t.Fatalf("create account: %d %s", st, body)
	}

	st, body, _ := serve(t, h, "POST", "/sdr/accounts/acme/webhooks", `{"url": "`+rcv.URL+`/hook", "events": ["run.completed"]}`)
	if st != 201 {
		t.Fatalf("create webhook: %d %s", st, body)
	}
	var created struct {
		ID, Secret, URL string
		Events          []string
	}
	json.Unmarshal([]byte(body), &created)
	if !strings.HasPrefix(created.ID, "wh_") || !strings.HasPrefix(created.Secret, "whsec_") || created.URL != rcv.URL+"/hook" {
		t.Fatalf("created %s", body)
	}
	st, body, _ = serve(t, h, "GET", "/sdr/accounts/acme/webhooks", "")
	if st != 200 || !strings.Contains(body, created.ID) || strings.Contains(body, created.Secret) || strings.Contains(body, "whsec_") {
		t.Errorf("list: %d %s (want the endpoint, no secret)", st, body)
	}

	st, body, _ = serve(t, h, "POST", "/sdr/webhooks/"+created.ID+"/test", "")
	if st != 202 || !strings.Contains(body, `"event":"webhook.test"`) {
		t.Fatalf("test event: %d %s", st, body)
	}
	var r *http.Request
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the test event was not delivered")
	}
	wh, _ := standardwebhooks.NewWebhook(created.Secret)
	if err := wh.Verify(<-bodies, r.Header); err != nil {
		t.Errorf("test event signature: %v", err)
	}

	st, body, _ = serve(t, h, "POST", "/sdr/webhooks/"+created.ID+"/rotate", "")
	if st != 200 || !strings.Contains(body, `"secret":"whsec_`) || strings.Contains(body, created.Secret) || !strings.Contains(body, "previous_secret_expires_at") {
		t.Errorf("rotate: %d %s", st, body)
	}

	var log struct {
		Deliveries []webhooks.DeliveryView `json:"deliveries"`
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, body, _ = serve(t, h, "GET", "/sdr/webhooks/"+created.ID+"/deliveries", "")
		json.Unmarshal([]byte(body), &log)
		if len(log.Deliveries) == 1 && log.Deliveries[0].Status == "succeeded" {
			break
		}
	}
	if len(log.Deliveries) != 1 || log.Deliveries[0].Status != "succeeded" || log.Deliveries[0].LastStatusCode != 200 || log.Deliveries[0].Attempts != 1 {
		t.Fatalf("delivery log: %s", body)
	}
	st, body, _ = serve(t, h, "POST", "/sdr/deliveries/"+log.Deliveries[0].ID+"/resend", "")
	if st != 202 || !strings.Contains(body, `"status":"pending"`) {
		t.Errorf("resend: %d %s", st, body)
	}
	select {
	case r = <-got:
		if r.Header.Get("webhook-id") != log.Deliveries[0].ID {
			t.Errorf("resent with webhook-id %q, want %q", r.Header.Get("webhook-id"), log.Deliveries[0].ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the resend was not delivered")
	}

	for _, tc := range []struct {
		method, path, body string
		status             int
		contains, allow    string
	}{
		{"POST", "/sdr/accounts/acme/webhooks", `{"url": "ftp://x/", "events": ["run.completed"]}`, 400, "invalid webhook url: the url must be http or https", ""},
		{"POST", "/sdr/accounts/acme/webhooks", `{"url": "` + rcv.URL + `", "events": ["run.started"]}`, 400, "invalid webhook events", ""},
		{"POST", "/sdr/accounts/acme/webhooks", `{"url": "` + rcv.URL + `"}`, 400, "invalid webhook events", ""},
		{"POST", "/sdr/accounts/acme/webhooks", `{"url": "` + rcv.URL + `", "events": ["run.failed"], "x": 1}`, 400, "invalid JSON body", ""},
		{"POST", "/sdr/accounts/nope/webhooks", `{"url": "` + rcv.URL + `", "events": ["run.failed"]}`, 404, "account nope not found", ""},
		{"GET", "/sdr/accounts/nope/webhooks", "", 404, "account nope not found", ""},
		{"PUT", "/sdr/accounts/acme/webhooks", "", 405, "use POST or GET", "POST, GET"},
		{"POST", "/sdr/webhooks/wh_none/test", "", 404, "webhook wh_none not found", ""},
		{"POST", "/sdr/webhooks/wh_none/rotate", "", 404, "webhook wh_none not found", ""},
		{"GET", "/sdr/webhooks/wh_none/deliveries", "", 404, "webhook wh_none not found", ""},
		{"GET", "/sdr/webhooks/" + created.ID + "/deliveries?limit=0", "", 400, "limit must be", ""},
		{"POST", "/sdr/deliveries/msg_none/resend", "", 404, "delivery msg_none not found", ""},
		{"DELETE", "/sdr/webhooks/" + created.ID, "", 204, "", ""},
		{"DELETE", "/sdr/webhooks/" + created.ID, "", 404, "not found", ""},
	} {
		st, body, allow := serve(t, h, tc.method, tc.path, tc.body)
		if st != tc.status || !strings.Contains(body, tc.contains) || allow != tc.allow {
			t.Errorf("%s %s: %d %q (Allow %q), want %d containing %q", tc.method, tc.path, st, body, allow, tc.status, tc.contains)
		}
	}
}

// TestWebhookRoutesRefusePrivate: without allow_private a loopback
// receiver is refused at registration.
func TestWebhookRoutesRefusePrivate(t *testing.T) {
	h, _ := newTestHandler(t)
	h.Webhooks = webhooks.New(webhooks.Config{Store: h.Store.(store.Store)})
	serve(t, h, "POST", "/sdr/accounts", `{"id": "acme"}`)
	st, body, _ := serve(t, h, "POST", "/sdr/accounts/acme/webhooks", `{"url": "https://127.0.0.1:8443/x", "events": ["run.failed"]}`)
	if st != 400 || !strings.Contains(body, "127.0.0.1 is not a public address") {
		t.Errorf("loopback endpoint: %d %s", st, body)
	}
}

// TestWebhookRoutesModes: "mode" picks the live account's endpoints or its
// test twin's, which each list keeps apart; a test listing before any
// test endpoint is empty and creates no twin; a twin id still names its
// own test endpoints.
func TestWebhookRoutesModes(t *testing.T) {
	h, _ := newTestHandler(t)
	h.Webhooks = webhooks.New(webhooks.Config{Store: h.Store.(store.Store), AllowPrivate: true})
	serve(t, h, "POST", "/sdr/accounts", `{"id": "acme"}`)
	const url = "https://hooks.example.com/"
	steps := []struct {
		method, path, body string
		status             int
		contains, absent   string
		mode               string // in the answer when set
	}{
		{"GET", "/sdr/accounts/acme/webhooks?mode=test", "", 200, `{"webhooks":[]}`, "", ""},
		{"POST", "/sdr/accounts/acme/webhooks", `{"url": "` + url + `live", "events": ["run.failed"]}`, 201, `"account_id":"acme",`, "", `"mode":"live"`},
		{"POST", "/sdr/accounts/acme/webhooks", `{"url": "` + url + `test", "events": ["run.failed"], "mode": "test"}`, 201, `"account_id":"acme~test"`, "", `"mode":"test"`},
		{"POST", "/sdr/accounts/acme~test/webhooks", `{"url": "` + url + `twin", "events": ["run.failed"]}`, 201, `"account_id":"acme~test"`, "", `"mode":"test"`},
		{"GET", "/sdr/accounts/acme/webhooks", "", 200, url + "live", url + "test", ""},
		{"GET", "/sdr/accounts/acme/webhooks?mode=live", "", 200, url + "live", url + "test", ""},
		{"GET", "/sdr/accounts/acme/webhooks?mode=test", "", 200, url + "twin", url + "live", ""},
		{"GET", "/sdr/accounts/acme~test/webhooks?mode=test", "", 200, url + "test", url + "live", ""},
		{"POST", "/sdr/accounts/acme/webhooks", `{"url": "` + url + `", "events": ["run.failed"], "mode": "prod"}`, 400, `mode must be "live" (the default) or "test"`, "", ""},
		{"GET", "/sdr/accounts/acme/webhooks?mode=prod", "", 400, `mode must be "live"`, "", ""},
		{"GET", "/sdr/accounts/acme~test/webhooks?mode=live", "", 400, "acme~test is a test account; its live endpoints are acme's", "", ""},
	}
	for _, s := range steps {
		st, body, _ := serve(t, h, s.method, s.path, s.body)
		if st != s.status || !strings.Contains(body, s.contains) || (s.absent != "" && strings.Contains(body, s.absent)) || !strings.Contains(body, s.mode) {
			t.Errorf("%s %s: %d %s, want %d containing %q without %q", s.method, s.path, st, body, s.status, s.contains, s.absent)
		}
	}
	if _, body, _ := serve(t, h, "GET", "/sdr/accounts/acme/webhooks?mode=test", ""); strings.Count(body, `"id":"wh_`) != 2 {
		t.Errorf("test endpoints: %s, want the two registered in test mode", body)
	}
	// A test listing never creates the twin of an account without one.
	serve(t, h, "POST", "/sdr/accounts", `{"id": "beta"}`)
	serve(t, h, "GET", "/sdr/accounts/beta/webhooks?mode=test", "")
	if _, err := h.Store.GetAccount(context.Background(), "beta~test"); err == nil {
		t.Error("listing test endpoints created the test twin")
	}
}
