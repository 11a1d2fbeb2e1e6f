package caddymodule

import (
	"context"
	"path/filepath"
	"socialrouter/internal/testservices"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"socialrouter/caddymodule/store/backend"
)

// TestReloadSharesState: a config provisioned before the previous one is
// cleaned up (what a reload does) shares its store, breakers and in-flight
// counts; once every config is gone, the next starts afresh.
func TestReloadSharesState(t *testing.T) {
	dir := t.TempDir()
	svcDir := declarationsDir(t)
	provision := func() *App {
		t.Helper()
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		t.Cleanup(cancel)
		a := &App{Services: svcDir, Storage: &backend.Config{Type: backend.Badger, Dir: dir}, Sources: map[string]*SourceConfig{
			"source_a": {BaseURL: "http://127.0.0.1:1"}, "source_b": {BaseURL: "http://127.0.0.1:1"},
		}}
		if err := a.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		return a
	}
	old := provision()
	release, ok := old.shared.inflight.Acquire("acme", 1)
	if !ok {
		t.Fatal("first run refused")
	}
	next := provision()
	if next.store != old.store || next.shared != old.shared {
		t.Fatal("the new config opened its own store or state")
	}
	if _, ok := next.shared.inflight.Acquire("acme", 1); ok {
		t.Error("a reload reset the in-flight count")
	}
	if err := old.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := next.store.CreateAccount(t.Context(), "acme", 0, time.Now()); err != nil {
		t.Fatalf("store closed with the old config: %v", err)
	}
	release()
	if err := next.Cleanup(); err != nil {
		t.Fatal(err)
	}
	fresh := provision()
	defer fresh.Cleanup()
	if fresh.shared == old.shared {
		t.Error("state outlived every config")
	}
}

// declarationsDir writes the embedded service declarations (services.FS's
// *.cue) to a temporary directory: the app reads its services from disk,
// as an operator's Caddyfile names them.
func declarationsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// With their examples: Provision runs sdr check's example checks.
	if err := testservices.CopyServices(testservices.ServicesDir(filepath.Join("..", "services")), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
