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
)

// pinService is a service file that adds pin_net/pin.info.
const pinService = `package sdr

services: "pin_net/pin.info": {
	platform:    "pin_net"
	service:     "pin.info"
	description: "One pin by URL."
	input_kind:  "url"
	record:      "#PinInfo"
	accepts: [{
		format:  "https://www.pinterest.com/pin/<id>"
		example: "https://www.pinterest.com/pin/123456789/"
		pattern: "https://(?:www\\.)?pinterest\\.com/pin/[0-9]+/?"
	}]
	offers: [{
		offer:            "source_b/pin_net"
		price_per_record: 0.001725
		max_inputs:       1000
		target:           "gd_pin_example"
		request:          "{input: [.inputs[] | {url: .}]}"
		normalize:        "{name: .title, source: \"pin_net\", extracted_at: $now}"
	}]
}

#PinInfo: {
	name?:         string
	source?:       string
	extracted_at?: string
}
`

// registryWithPin is the repository's services plus pin_net/pin.info.
func registryWithPin(t *testing.T) *registry.Registry {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "services")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pin_net.cue"), []byte(pinService), 0o644); err != nil {
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

func listNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// TestSwapNotifies: a connected session outlives a swap of the tool set,
// is sent tools/list_changed when tools are added or removed, and nothing
// when a swap changes nothing.
func TestSwapNotifies(t *testing.T) {
	base, withPin := toolset(t, servicesRegistry(t)), toolset(t, registryWithPin(t))
	e := NewEndpoint("test", nil)
	defer e.Close()
	// No tool is called here, so the swaps give no backend.
	e.Swap(base, nil)
	srv := httptest.NewServer(e)
	defer srv.Close()

	changed := make(chan struct{}, 10)
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, _ *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if names := listNames(t, cs); slices.Contains(names, "pin_net_pin_info") || len(names) != len(base.tools) {
		t.Fatalf("before the swap: %v", names)
	}
	wait := func(want bool, what string) {
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

	e.Swap(withPin, nil)
	wait(true, "adding a service")
	if names := listNames(t, cs); !slices.Contains(names, "pin_net_pin_info") || len(names) != len(base.tools)+1 {
		t.Fatalf("after adding: %v", names)
	}
	e.Swap(toolset(t, registryWithPin(t)), nil)
	wait(false, "the same tools again")
	e.Swap(base, nil)
	wait(true, "removing a service")
	if names := listNames(t, cs); slices.Contains(names, "pin_net_pin_info") {
		t.Fatalf("after removing: %v", names)
	}
}
