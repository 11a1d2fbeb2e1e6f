package mcp

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/caddymodule/registry"
	"socialrouter/internal/mcptest"
)

// registryWithPin is the repository's services plus pin_net/pin.info
// (testdata/pin_net.cue).
func registryWithPin(t *testing.T) *registry.Registry {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "services")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() { // examples/: payloads, not declarations
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pin, err := os.ReadFile(filepath.Join("testdata", "pin_net.cue"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pin_net.cue"), pin, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := registry.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func toolset(t *testing.T, r *registry.Registry) *Toolset {
	t.Helper()
	ts, err := NewToolset(r)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestSwapNotifies: a connected session outlives a swap of the tool set,
// is sent tools/list_changed when tools are added or removed, and nothing
// when a swap changes nothing.
func TestSwapNotifies(t *testing.T) {
	base, withPin := toolset(t, servicesRegistry(t)), toolset(t, registryWithPin(t))
	e := NewEndpoint("test", nil)
	t.Cleanup(func() { _ = e.Close() })
	// No tool is called here, so the swaps give no backend.
	e.Swap("v1", base, nil)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close) // after the session closes (cleanups run last first)

	cs, wait := connectWatching(t, srv.URL)
	if names := mcptest.ToolNames(t, cs); slices.Contains(names, "pin_net_pin_info") || len(names) != len(base.tools) {
		t.Fatalf("before the swap: %v", names)
	}

	e.Swap("v2", withPin, nil)
	wait(true, "adding a service")
	if names := mcptest.ToolNames(t, cs); !slices.Contains(names, "pin_net_pin_info") || len(names) != len(base.tools)+1 {
		t.Fatalf("after adding: %v", names)
	}
	// The end of a reload: the replaced config stops, nothing changes.
	e.Release("v1")
	wait(false, "the replaced config stopping")
	e.Swap("v3", toolset(t, registryWithPin(t)), nil)
	wait(false, "the same tools again")
	e.Swap("v4", base, nil)
	wait(true, "removing a service")
	if names := mcptest.ToolNames(t, cs); slices.Contains(names, "pin_net_pin_info") {
		t.Fatalf("after removing: %v", names)
	}
	// A reload whose start failed: the new config stops while the one it
	// replaced still runs, whose tools come back.
	e.Release("v4")
	wait(true, "a failed reload")
	if names := mcptest.ToolNames(t, cs); !slices.Contains(names, "pin_net_pin_info") {
		t.Fatalf("after a failed reload: %v", names)
	}
	// The last config stopping (the server exits) changes nothing.
	e.Release("v3")
	wait(false, "the last config stopping")
}

// connectWatching connects a session and returns it with wait, which
// fails the test unless a tools/list_changed arrives within 500ms (want)
// or none does (!want).
func connectWatching(t *testing.T, url string) (*sdk.ClientSession, func(want bool, what string)) {
	t.Helper()
	changed := make(chan struct{}, 10)
	cs := mcptest.Connect(t, url, "", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	return cs, func(want bool, what string) {
		t.Helper()
		select {
		case <-changed:
			if !want {
				t.Fatalf("%s: tools/list_changed sent", what)
			}
		case <-time.After(500 * time.Millisecond):
			if want {
				t.Fatalf("%s: no tools/list_changed within 500ms", what)
			}
		}
	}
}

func TestLeadingID(t *testing.T) {
	for doc, want := range map[string]string{
		`{"id":"ext_01abc","status":"completed","data":[{"id":"x"}]}`: "ext_01abc",
		`{"status":"completed","id":"ext_01abc"}`:                     "",
		`{"balance":1.5,"currency":"USD"}`:                            "",
		`{"id":"key_1"}`:                                              "",
		`[]`:                                                          "",
	} {
		if got := leadingID([]byte(doc)); got != want {
			t.Errorf("leadingID(%s) = %q, want %q", doc, got, want)
		}
	}
}

// TestReplaceNotifies: a registry swap replaces the serving config's tools
// in place: sessions are told, and a later reload and its end behave as
// after a Swap; a replace for a config that is not serving changes what
// it would bring back, not what is served.
func TestReplaceNotifies(t *testing.T) {
	base, withPin := toolset(t, servicesRegistry(t)), toolset(t, registryWithPin(t))
	e := NewEndpoint("test", nil)
	t.Cleanup(func() { _ = e.Close() })
	e.Swap("v1", base, nil)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	cs, wait := connectWatching(t, srv.URL)
	hasPin := func() bool { return slices.Contains(mcptest.ToolNames(t, cs), "pin_net_pin_info") }

	e.Replace("v1", withPin, nil)
	wait(true, "a swap adding a service")
	if !hasPin() {
		t.Fatal("the added tool is not listed")
	}
	e.Replace("v1", withPin, nil)
	wait(false, "a swap changing nothing")
	e.Replace("v0", base, nil) // a config long gone
	wait(false, "a swap of a config not serving")
	if !hasPin() {
		t.Fatal("a stale config's swap changed the tools")
	}
	// A reload to v2 whose start fails brings back v1 as last swapped
	// (with pin), even though v1 swapped while v2 was starting.
	e.Swap("v2", base, nil)
	wait(true, "a reload removing the service")
	e.Replace("v1", toolset(t, registryWithPin(t)), nil)
	wait(false, "a swap of the replaced config")
	e.Release("v2")
	wait(true, "a failed reload")
	if !hasPin() {
		t.Fatal("the failed reload did not bring back v1's swapped tools")
	}
}
