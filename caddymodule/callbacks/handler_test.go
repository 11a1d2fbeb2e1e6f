package callbacks

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"socialrouter/caddymodule/sources"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

// fixture is a handler over a hub with source "a" (actor_run) and "b"
// (dataset_scrape), and the log it writes.
func fixture(t *testing.T) (*Handler, *Hub, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	hub := NewHub()
	h := &Handler{Waker: hub, Log: zap.New(core), Sources: func(id string) (Source, bool) {
		switch id {
		case "a":
			return Source{Protocol: sources.ProtocolActorRun, Secret: secret}, true
		case "b":
			return Source{Protocol: sources.ProtocolDatasetScrape, Secret: secret}, true
		}
		return Source{}, false
	}}
	return h, hub, logs
}

func post(h http.Handler, path, auth, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func path(src, run string, batch int, token string) string {
	return sources.CallbackPrefix + src + "/" + run + "/" + string(rune('0'+batch)) + "/" + token
}

const succeeded = `{"userId":"u","createdAt":"2026-01-01T00:00:00Z","eventType":"ACTOR.RUN.SUCCEEDED",
	"eventData":{"actorId":"act","actorRunId":"R1"},"resource":{"id":"R1","status":"SUCCEEDED","defaultDatasetId":"D1"}}`

func woken(w sources.Wait) bool {
	select {
	case <-w.Woken():
		return true
	case <-time.After(50 * time.Millisecond):
		return false
	}
}

func TestTokenIsPerRunAndBatch(t *testing.T) {
	tok := sources.CallbackToken(secret, "a", "run_1", 0)
	for _, other := range []string{
		sources.CallbackToken(secret, "a", "run_1", 1),
		sources.CallbackToken(secret, "a", "run_2", 0),
		sources.CallbackToken(secret, "b", "run_1", 0),
		sources.CallbackToken([]byte("another secret of thirty-two bytes!"), "a", "run_1", 0),
	} {
		if other == tok {
			t.Fatalf("token %s repeats for another source, run, batch or secret", tok)
		}
	}
	if !sources.CheckCallbackToken(secret, "a", "run_1", 0, tok) || sources.CheckCallbackToken(secret, "a", "run_1", 0, tok[:len(tok)-1]) {
		t.Fatal("CheckCallbackToken does not tell the token from a shortened one")
	}
	if len(tok) < 40 {
		t.Fatalf("token %q is short", tok)
	}
}

func TestCallbackWakesItsBatch(t *testing.T) {
	h, hub, logs := fixture(t)
	w := hub.Register("a", "run_1", 0)
	defer w.Close()
	w.Bind(sources.Handle{Protocol: sources.ProtocolActorRun, RunID: "R1", DatasetID: "D1"})
	if rec := post(h, path("a", "run_1", 0, sources.CallbackToken(secret, "a", "run_1", 0)), "", succeeded); rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if !woken(w) || w.Finished() != sources.JobSucceeded {
		t.Fatalf("batch not woken as succeeded (%q)", w.Finished())
	}
	// The same callback again: 200 (the upstream stops), nothing changes, logged.
	if rec := post(h, path("a", "run_1", 0, sources.CallbackToken(secret, "a", "run_1", 0)), "", succeeded); rec.Code != 200 {
		t.Fatalf("replay: status %d", rec.Code)
	}
	if n := logs.FilterMessage("callback changes nothing").FilterField(zap.Error(ErrReplayed)).Len(); n != 1 {
		t.Fatalf("replay logged %d times, want 1: %v", n, logs.All())
	}
	w.Close()
	if rec := post(h, path("a", "run_1", 0, sources.CallbackToken(secret, "a", "run_1", 0)), "", succeeded); rec.Code != 200 {
		t.Fatalf("replay after the batch ended: status %d", rec.Code)
	}
	if n := logs.FilterField(zap.Error(ErrReplayed)).Len(); n != 2 {
		t.Fatalf("replay after the end logged %d times in all, want 2", n)
	}
}

func TestForgedCallbacksChangeNothing(t *testing.T) {
	h, hub, logs := fixture(t)
	wa := hub.Register("a", "run_1", 0)
	defer wa.Close()
	wa.Bind(sources.Handle{Protocol: sources.ProtocolActorRun, RunID: "R1", DatasetID: "D1"})
	wb := hub.Register("b", "run_1", 0)
	defer wb.Close()
	wb.Bind(sources.Handle{Protocol: sources.ProtocolDatasetScrape, SnapshotID: "s_1"})
	notify := `{"snapshot_id":"s_1","status":"ready"}`
	for _, tc := range []struct {
		name, path, auth, body string
		status                 int
	}{
		{"bad token", path("a", "run_1", 0, sources.CallbackToken(secret, "a", "run_1", 0)[1:]+"x"), "", succeeded, 404},
		{"other batch's token", path("a", "run_1", 0, sources.CallbackToken(secret, "a", "run_1", 1)), "", succeeded, 404},
		{"no token", sources.CallbackPrefix + "a/run_1/0", "", succeeded, 404},
		{"unknown source", path("c", "run_1", 0, sources.CallbackToken(secret, "c", "run_1", 0)), "", succeeded, 404},
		{"notify without auth_header", path("b", "run_1", 0, sources.CallbackToken(secret, "b", "run_1", 0)), "", notify, 401},
		{"notify with a wrong auth_header", path("b", "run_1", 0, sources.CallbackToken(secret, "b", "run_1", 0)), "Bearer nope", notify, 401},
		{"payload not the documented one", path("a", "run_1", 0, sources.CallbackToken(secret, "a", "run_1", 0)), "", `{"eventType":"ACTOR.RUN.CREATED","eventData":{"actorRunId":"R1"}}`, 400},
	} {
		if rec := post(h, tc.path, tc.auth, tc.body); rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, rec.Code, tc.status, rec.Body)
		}
	}
	if woken(wa) || woken(wb) {
		t.Fatal("a forged callback woke a batch")
	}
	if n := logs.FilterLevelExact(zap.WarnLevel).Len(); n != 7 {
		t.Fatalf("%d refusals logged, want 7: %v", n, logs.All())
	}
	// The genuine notify, with its auth_header, wakes.
	if rec := post(h, path("b", "run_1", 0, sources.CallbackToken(secret, "b", "run_1", 0)), sources.CallbackAuth(secret, "b"), notify); rec.Code != 200 || !woken(wb) {
		t.Fatalf("genuine notify: status %d, woken %v", rec.Code, woken(wb))
	}
}

func TestCallbackForOtherWorkChangesNothing(t *testing.T) {
	h, hub, logs := fixture(t)
	w := hub.Register("a", "run_1", 0)
	defer w.Close()
	w.Bind(sources.Handle{Protocol: sources.ProtocolActorRun, RunID: "R2", DatasetID: "D2"})
	// R1 is an earlier attempt's run of the same batch, ending late.
	if rec := post(h, path("a", "run_1", 0, sources.CallbackToken(secret, "a", "run_1", 0)), "", succeeded); rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	if woken(w) {
		t.Fatal("woken by another run's callback")
	}
	if logs.FilterField(zap.Error(ErrMismatch)).Len() != 1 {
		t.Fatalf("mismatch not logged: %v", logs.All())
	}
}

func TestCallbackBeforeTheStartAnswered(t *testing.T) {
	hub := NewHub()
	w := hub.Register("a", "run_1", 0)
	defer w.Close()
	h := sources.Handle{Protocol: sources.ProtocolActorRun, RunID: "R1", DatasetID: "D1"}
	if err := hub.Wake(t.Context(), "a", "run_1", 0, sources.Handle{Protocol: sources.ProtocolActorRun, RunID: "R1"}, sources.JobFailed); err != nil {
		t.Fatal(err)
	}
	if woken(w) {
		t.Fatal("woken before the batch knew its work")
	}
	w.Bind(h)
	if !woken(w) || w.Finished() != sources.JobFailed {
		t.Fatal("the early callback did not wake the batch once bound")
	}
	if err := hub.Wake(t.Context(), "a", "run_9", 0, h, sources.JobFailed); err != ErrNoWaiter {
		t.Fatalf("callback for nobody: %v, want ErrNoWaiter", err)
	}
}
