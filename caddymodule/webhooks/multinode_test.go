package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
	"socialrouter/internal/testenv"
)

// TestTwoNodesDeliverEachOnce runs two workers, each on its own store
// handle (as two gateway nodes) over one PostgreSQL schema: every
// delivery reaches the receiver exactly once, whichever node claimed it.
func TestTwoNodesDeliverEachOnce(t *testing.T) {
	url := testenv.PostgresURL(t, "the two-node webhook test")
	b := make([]byte, 8)
	rand.Read(b)
	schema := "sdr_test_hooks_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Errorf("connecting to drop schema: %v", err)
			return
		}
		defer conn.Close(context.Background())
		conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
	open := func() store.Store {
		s, err := postgres.Open(t.Context(), url, postgres.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	stA, stB := open(), open()

	var mu sync.Mutex
	seen := map[string]int{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond) // an attempt takes a little while, so claims overlap
		mu.Lock()
		seen[r.Header.Get("webhook-id")]++
		mu.Unlock()
	}))
	defer rcv.Close()

	cfg := func(s store.Store) Config {
		return Config{Store: s, AllowPrivate: true, PollInterval: 10 * time.Millisecond, Concurrency: 4}
	}
	a, bnode := New(cfg(stA)), New(cfg(stB))
	if _, err := stA.CreateAccount(t.Context(), "acme", 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(t.Context(), "acme", rcv.URL, Events); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		if err := a.Notify(t.Context(), "acme", EventRunCompleted, []byte(fmt.Sprintf(`{"id":"ext_%d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	a.Start()
	bnode.Start()
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := len(seen)
		mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a duplicate would arrive now
	a.Stop()
	bnode.Stop()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("%d distinct deliveries received, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s received %d times", id, c)
		}
	}
	ds, err := stB.ListDeliveries(t.Context(), "acme", "", n+1)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Status != store.DeliverySucceeded || d.Attempts != 1 {
			t.Errorf("delivery %s: %s after %d attempts", d.ID, d.Status, d.Attempts)
		}
	}
}
