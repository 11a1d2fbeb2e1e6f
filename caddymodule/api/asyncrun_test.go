package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/sources"
	"socialrouter/caddymodule/store"
	"socialrouter/cmd/upstream-sim/sim"
)

// notes is a RunNotifier that keeps what it was told.
type notes struct {
	mu     sync.Mutex
	events map[string]string // run id → account + event
	docs   map[string][]byte
}

func (n *notes) Notify(_ context.Context, account, event string, run []byte) error {
	var v struct{ ID string }
	_ = json.Unmarshal(run, &v)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events[v.ID] = account + " " + event
	n.docs[v.ID] = run
	return nil
}

func (n *notes) event(id string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.events[id]
}

// newAsyncAPI is the test API with a router on an in-process simulator
// answering after latency, and an async worker telling n.
func newAsyncAPI(t *testing.T, latency time.Duration, n *notes) *testAPI {
	t.Helper()
	a := newTestAPI(t, 10*credits.PerCredit)
	srv := httptest.NewServer(sim.New(sim.Options{Latency: latency}))
	t.Cleanup(srv.Close)
	rtr := router.New(router.Config{AttemptTimeout: time.Minute, SoftTimeout: time.Minute}, a.simClients(t, srv.URL), router.NewBreakers(), zap.NewNop())
	w := async.New(async.Config{Store: a.store, Owner: "node1", Lease: 300 * time.Millisecond, Poll: 20 * time.Millisecond})
	a.Router, a.AsyncRouter, a.Async = rtr, rtr, w
	runner := a.AsyncRunner()
	w.SetRunner(runner, runner, n)
	w.Start()
	t.Cleanup(w.Stop)
	return a
}

// simClients are a's declared sources' clients, each on the simulator at
// url (snapshot polls every 20 ms).
func (a *testAPI) simClients(tb testing.TB, url string) map[string]sources.Client {
	tb.Helper()
	clients := map[string]sources.Client{}
	for _, src := range a.Registry.Sources {
		c, err := sources.New(src.Protocol, sources.Config{BaseURL: url, PollInterval: 20 * time.Millisecond})
		if err != nil {
			tb.Fatal(err)
		}
		clients[src.ID] = c
	}
	return clients
}

func (a *testAPI) submit(t *testing.T, body string) string {
	t.Helper()
	r := httptest.NewRequest("POST", "/v1/extract/forum_net/subreddit.posts", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+a.secret)
	r.Header.Set("Prefer", "respond-async")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, r)
	var run struct{ ID, Status string }
	if rec.Code != http.StatusAccepted || json.Unmarshal(rec.Body.Bytes(), &run) != nil || run.Status != "running" {
		t.Fatalf("submit: %d %s", rec.Code, rec.Body)
	}
	return run.ID
}

func waitEvent(t *testing.T, n *notes, id string) string {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if e := n.event(id); e != "" {
			return e
		}
	}
	t.Fatalf("no notification for %s", id)
	return ""
}

// TestAsyncRunnerCompletes: an async run is routed, settled and charged
// as a sync run, and the notifier gets run.completed with the stored
// run's JSON.
func TestAsyncRunnerCompletes(t *testing.T) {
	n := &notes{events: map[string]string{}, docs: map[string][]byte{}}
	a := newAsyncAPI(t, 0, n)
	id := a.submit(t, `{"url": "https://www.reddit.com/r/golang", "provider": "source_a/actor_6", "limit": 2}`)
	if e := waitEvent(t, n, id); e != "acme run.completed" {
		t.Fatalf("event %q", e)
	}
	stored, err := a.store.GetRunJSON(t.Context(), nil, "acme", id)
	if err != nil || string(stored) != string(n.docs[id]) {
		t.Errorf("notified %s, stored %s (%v)", n.docs[id], stored, err)
	}
	run, _ := a.store.GetRun(t.Context(), "acme", id)
	acct, _ := a.store.GetAccount(t.Context(), "acme")
	if run.Status != "completed" || len(run.Data) == 0 || run.CreditsUsed != credits.Micros(len(run.Data))*2760 ||
		acct.Balance != 10*credits.PerCredit-run.CreditsUsed {
		t.Errorf("run %s %d records %v, balance %v", run.Status, len(run.Data), run.CreditsUsed, acct.Balance)
	}
	if _, err := a.store.GetAsyncRun(t.Context(), "acme", id); err == nil {
		t.Error("the settled run is still in flight in the store")
	}
}

// TestAsyncRunnerCancels: a cancelled run stops its upstream call at
// once, is settled cancelled with no charge, frees its hold, and the
// notifier gets run.cancelled.
func TestAsyncRunnerCancels(t *testing.T) {
	n := &notes{events: map[string]string{}, docs: map[string][]byte{}}
	a := newAsyncAPI(t, 30*time.Second, n)
	id := a.submit(t, `{"url": "https://www.reddit.com/r/golang", "provider": "source_a/actor_6", "limit": 200}`)
	time.Sleep(100 * time.Millisecond) // the upstream call is under way
	t0 := time.Now()
	res, _ := a.do(t, "POST", "/v1/extractions/"+id+"/cancel", "", true)
	var run struct {
		Status      string
		CreditsUsed float64 `json:"credits_used"`
	}
	if res.StatusCode != 200 || json.NewDecoder(res.Body).Decode(&run) != nil || run.Status != "cancelled" || run.CreditsUsed != 0 {
		t.Fatalf("cancel: %d %+v", res.StatusCode, run)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("cancel took %s", d)
	}
	if e := waitEvent(t, n, id); e != "acme run.cancelled" {
		t.Errorf("event %q", e)
	}
	acct, _ := a.store.GetAccount(t.Context(), "acme")
	if acct.Balance != 10*credits.PerCredit {
		t.Errorf("balance %v after a cancel", acct.Balance)
	}
	// The hold is gone: the whole balance can be held again.
	if got, err := a.store.Reserve(t.Context(), storeHold("ext_next", 10*credits.PerCredit)); err != nil || got.Records != 1 {
		t.Errorf("Reserve of the whole balance after the cancel = %+v, %v", got, err)
	}
}

// storeHold is a one-record hold of price on acme.
func storeHold(id string, price credits.Micros) store.Hold {
	return store.Hold{ID: id, AccountID: "acme", Price: price, Records: 1}
}
