package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hookReceiver is a webhook receiver on 127.0.0.1: it verifies every
// delivery with the Standard Webhooks reference library (timestamp
// tolerance included), answers the queued statuses first and then 204,
// and records what it got.
type hookReceiver struct {
	*httptest.Server
	t        *testing.T
	mu       sync.Mutex
	secret   string
	statuses []int
	got      []hookDelivery
}

type hookDelivery struct {
	ID, Timestamp string
	Type          string
	Verified      error
	Status        int
}

func newHookReceiver(t *testing.T, statuses ...int) *hookReceiver {
	h := &hookReceiver{t: t, statuses: statuses}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		d := hookDelivery{ID: r.Header.Get("webhook-id"), Timestamp: r.Header.Get("webhook-timestamp"), Status: http.StatusNoContent}
		wh, err := standardwebhooks.NewWebhook(h.secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		d.Verified = err
		var p struct{ Type string }
		_ = json.Unmarshal(body, &p)
		d.Type = p.Type
		if len(h.statuses) > 0 {
			d.Status, h.statuses = h.statuses[0], h.statuses[1:]
		}
		h.got = append(h.got, d)
		w.WriteHeader(d.Status)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) setSecret(s string) { h.mu.Lock(); h.secret = s; h.mu.Unlock() }

func (h *hookReceiver) deliveries() []hookDelivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookDelivery(nil), h.got...)
}

// waitDeliveries waits until the receiver got n requests.
func (h *hookReceiver) waitDeliveries(n int, within time.Duration) []hookDelivery {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if got := h.deliveries(); len(got) >= n {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("the receiver got %d deliveries in %v, want %d", len(h.deliveries()), within, n)
	return nil
}

// webhookGateway starts a gateway that allows loopback webhook endpoints
// and retries after 1 s, 1 s, 1 s.
func webhookGateway(t *testing.T, dashboard bool) *gateway {
	t.Helper()
	c := defaultConfig(t, nil)
	c.AppExtra = "webhooks_allow_private\n\t\twebhooks_retry_schedule 1s 1s 1s"
	if dashboard {
		c.SiteExtra = "sdr_dashboard"
	}
	return startGateway(t, c)
}

// TestWebhooksRetriedAndVerified registers an endpoint through the admin
// API, sends a test event to a receiver that answers 500 twice: the
// receiver sees three attempts with one webhook-id, each verified by the
// reference library, and the delivery log says so.
func TestWebhooksRetriedAndVerified(t *testing.T) {
	g := webhookGateway(t, false)
	g.account("acme", 1)
	rcv := newHookReceiver(t, 500, 500)

	st, body := g.admin("POST", "/sdr/accounts/acme/webhooks", map[string]any{"url": rcv.URL + "/hooks", "events": []string{"run.completed", "run.failed"}})
	if st != 201 {
		t.Fatalf("register: %d %s", st, body)
	}
	var ep struct{ ID, Secret string }
	_ = json.Unmarshal(body, &ep)
	if !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("register answered %s", body)
	}
	rcv.setSecret(ep.Secret)
	if st, body = g.admin("GET", "/sdr/accounts/acme/webhooks", nil); st != 200 || !strings.Contains(string(body), ep.ID) || strings.Contains(string(body), "whsec_") {
		t.Errorf("list: %d %s", st, body)
	}

	if st, body = g.admin("POST", "/sdr/webhooks/"+ep.ID+"/test", nil); st != 202 {
		t.Fatalf("test event: %d %s", st, body)
	}
	got := rcv.waitDeliveries(3, 15*time.Second)
	for i, d := range got {
		if d.Verified != nil {
			t.Errorf("attempt %d: the reference library refused it: %v", i+1, d.Verified)
		}
		if d.ID != got[0].ID || !strings.HasPrefix(d.ID, "msg_") {
			t.Errorf("attempt %d webhook-id %q, want %q", i+1, d.ID, got[0].ID)
		}
		if d.Type != "webhook.test" {
			t.Errorf("attempt %d type %q", i+1, d.Type)
		}
	}
	var log struct {
		Deliveries []struct {
			ID             string `json:"id"`
			Status         string `json:"status"`
			Attempts       int    `json:"attempts"`
			LastStatusCode int    `json:"last_status_code"`
		} `json:"deliveries"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, body = g.admin("GET", "/sdr/webhooks/"+ep.ID+"/deliveries", nil)
		_ = json.Unmarshal(body, &log)
		if len(log.Deliveries) == 1 && log.Deliveries[0].Status == "succeeded" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st != 200 || len(log.Deliveries) != 1 || log.Deliveries[0].Status != "succeeded" || log.Deliveries[0].Attempts != 3 ||
		log.Deliveries[0].LastStatusCode != 204 || log.Deliveries[0].ID != got[0].ID {
		t.Errorf("delivery log: %d %s", st, body)
	}
	time.Sleep(1500 * time.Millisecond)
	if n := len(rcv.deliveries()); n != 3 {
		t.Errorf("%d requests after success, want 3", n)
	}

	// The CLI reads the same routes: list, rotate (a new secret, once), log.
	if out, err := cli(t, g, "webhook", "list", "acme"); err != nil || !strings.Contains(out, ep.ID) || strings.Contains(out, "whsec_") {
		t.Errorf("caddy sdr webhook list: %v\n%s", err, out)
	}
	if out, err := cli(t, g, "webhook", "rotate", ep.ID); err != nil || !strings.Contains(out, `"secret": "whsec_`) || strings.Contains(out, ep.Secret) {
		t.Errorf("caddy sdr webhook rotate: %v\n%s", err, out)
	}
	if out, err := cli(t, g, "webhook", "deliveries", ep.ID, "--limit", "1"); err != nil || !strings.Contains(out, got[0].ID) || !strings.Contains(out, `"attempts": 3`) {
		t.Errorf("caddy sdr webhook deliveries: %v\n%s", err, out)
	}
	if out, err := cli(t, g, "webhook", "delete", ep.ID); err != nil {
		t.Errorf("caddy sdr webhook delete: %v\n%s", err, out)
	}
	if st, body = g.admin("GET", "/sdr/accounts/acme/webhooks", nil); st != 200 || strings.Contains(string(body), ep.ID) {
		t.Errorf("list after delete: %d %s", st, body)
	}
}

// TestWebhooksRefusePrivateAddresses: without webhooks_allow_private the
// admin API refuses endpoints on loopback, private and link-local
// addresses, and plain http.
func TestWebhooksRefusePrivateAddresses(t *testing.T) {
	g := startGateway(t, defaultConfig(t, nil))
	g.account("acme", 1)
	for _, u := range []string{"https://127.0.0.1:9/x", "https://localhost/x", "https://10.1.2.3/x", "https://169.254.169.254/latest", "https://[::1]/x", "http://93.184.215.14/x"} {
		st, body := g.admin("POST", "/sdr/accounts/acme/webhooks", map[string]any{"url": u, "events": []string{"run.completed"}})
		if st != 400 || !strings.Contains(string(body), "invalid webhook url") {
			t.Errorf("register %s: %d %s, want 400", u, st, body)
		}
	}
	if _, body := g.admin("GET", "/sdr/accounts/acme/webhooks", nil); !strings.Contains(string(body), `"webhooks":[]`) {
		t.Errorf("endpoints stored: %s", body)
	}
}

// TestWebhooksSurviveRestart kills the gateway with SIGKILL while a
// delivery waits for its retry: the restarted gateway sends the retry,
// under the same webhook-id, from the stored queue.
func TestWebhooksSurviveRestart(t *testing.T) {
	c := defaultConfig(t, nil)
	c.AppExtra = "webhooks_allow_private\n\t\twebhooks_retry_schedule 3s 3s"
	g := startGateway(t, c)
	g.account("acme", 1)
	rcv := newHookReceiver(t, 500)
	st, body := g.admin("POST", "/sdr/accounts/acme/webhooks", map[string]any{"url": rcv.URL, "events": []string{"run.cancelled"}})
	if st != 201 {
		t.Fatalf("register: %d %s", st, body)
	}
	var ep struct{ ID, Secret string }
	_ = json.Unmarshal(body, &ep)
	rcv.setSecret(ep.Secret)
	if st, body = g.admin("POST", "/sdr/webhooks/"+ep.ID+"/test", nil); st != 202 {
		t.Fatalf("test event: %d %s", st, body)
	}
	first := rcv.waitDeliveries(1, 10*time.Second)
	// The retry is what must survive the kill: wait until the first
	// attempt's 500 is recorded (a kill before that loses the attempt's
	// outcome, and the delivery is simply due again at the restart).
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, b := g.admin("GET", "/sdr/webhooks/"+ep.ID+"/deliveries", nil)
		if strings.Contains(string(b), `"attempts":1`) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the first attempt was not recorded: %s", b)
		}
	}
	if err := g.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = g.p.cmd.Process.Wait()

	g2 := startGateway(t, c)
	got := rcv.waitDeliveries(2, 15*time.Second)
	if got[1].ID != first[0].ID || got[1].Verified != nil || got[1].Status != 204 {
		t.Errorf("after the restart: %+v, want the retry of %s, verified, answered 204", got[1], first[0].ID)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, body = g2.admin("GET", "/sdr/webhooks/"+ep.ID+"/deliveries", nil)
		if strings.Contains(string(body), `"status":"succeeded"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(string(body), `"status":"succeeded"`) || !strings.Contains(string(body), `"attempts":2`) {
		t.Errorf("delivery log after the restart: %s", body)
	}
}
