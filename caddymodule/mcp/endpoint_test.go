package mcp

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/caddymodule/registry"
	"socialrouter/internal/mcptest"
	"socialrouter/internal/testservices"
)

// registryWithProbe is the repository's services plus the test-only probe
// service (internal/testservices), whose name no operator declares.
func registryWithProbe(t *testing.T) *registry.Registry {
	t.Helper()
	dir := t.TempDir()
	if err := testservices.CopyServices(testservices.ServicesDir(filepath.Join("..", "..", "services")), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := testservices.Add(dir, testservices.Probe); err != nil {
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
	base, withProbe := toolset(t, servicesRegistry(t)), toolset(t, registryWithProbe(t))
	e := NewEndpoint("test", nil)
	t.Cleanup(func() { _ = e.Close() })
	// No tool is called here, so the swaps give no backend.
	e.Swap("v1", base, nil)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close) // after the session closes (cleanups run last first)

	cs, wait := connectWatching(t, srv.URL)
	if names := mcptest.ToolNames(t, cs); slices.Contains(names, testservices.ProbeTool) || len(names) != len(base.tools) {
		t.Fatalf("before the swap: %v", names)
	}

	e.Swap("v2", withProbe, nil)
	wait(true, "adding a service")
	if names := mcptest.ToolNames(t, cs); !slices.Contains(names, testservices.ProbeTool) || len(names) != len(base.tools)+1 {
		t.Fatalf("after adding: %v", names)
	}
	// The end of a reload: the replaced config stops, nothing changes.
	e.Release("v1")
	wait(false, "the replaced config stopping")
	e.Swap("v3", toolset(t, registryWithProbe(t)), nil)
	wait(false, "the same tools again")
	e.Swap("v4", base, nil)
	wait(true, "removing a service")
	if names := mcptest.ToolNames(t, cs); slices.Contains(names, testservices.ProbeTool) {
		t.Fatalf("after removing: %v", names)
	}
	// A reload whose start failed: the new config stops while the one it
	// replaced still runs, whose tools come back.
	e.Release("v4")
	wait(true, "a failed reload")
	if names := mcptest.ToolNames(t, cs); !slices.Contains(names, testservices.ProbeTool) {
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
	base, withProbe := toolset(t, servicesRegistry(t)), toolset(t, registryWithProbe(t))
	e := NewEndpoint("test", nil)
	t.Cleanup(func() { _ = e.Close() })
	e.Swap("v1", base, nil)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	cs, wait := connectWatching(t, srv.URL)
	hasProbe := func() bool { return slices.Contains(mcptest.ToolNames(t, cs), testservices.ProbeTool) }

	e.Replace("v1", withProbe, nil)
	wait(true, "a swap adding a service")
	if !hasProbe() {
		t.Fatal("the added tool is not listed")
	}
	e.Replace("v1", withProbe, nil)
	wait(false, "a swap changing nothing")
	e.Replace("v0", base, nil) // a config long gone
	wait(false, "a swap of a config not serving")
	if !hasProbe() {
		t.Fatal("a stale config's swap changed the tools")
	}
	// A reload to v2 whose start fails brings back v1 as last swapped
	// (with pin), even though v1 swapped while v2 was starting.
	e.Swap("v2", base, nil)
	wait(true, "a reload removing the service")
	e.Replace("v1", toolset(t, registryWithProbe(t)), nil)
	wait(false, "a swap of the replaced config")
	e.Release("v2")
	wait(true, "a failed reload")
	if !hasProbe() {
		t.Fatal("the failed reload did not bring back v1's swapped tools")
	}
}
