package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store/backend"
	"socialrouter/internal/mcptest"
	"socialrouter/internal/testservices"
)

const swapService = testservices.SwapKey

// provisionSwapApp provisions and starts an app over a copy of the
// repository's declarations in dir (with their examples).
func provisionSwapApp(t *testing.T, dir string, watch time.Duration) *App {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	a := &App{Services: dir, Storage: &backend.Config{Type: backend.Badger, Dir: t.TempDir()}, Sources: map[string]*SourceConfig{
		"source_a": {BaseURL: "http://127.0.0.1:1"}, "source_b": {BaseURL: "http://127.0.0.1:1"},
	}, WatchServices: watch > 0, WatchDebounce: caddy.Duration(watch)}
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.Stop()
		_ = a.Cleanup()
	})
	return a
}

// addSwapService adds the test-only swap service and its example to dir
// (testservices.Swap: names no operator chooses).
func addSwapService(t *testing.T, dir string) {
	t.Helper()
	if skipped, err := testservices.Add(dir, testservices.Swap); err != nil || len(skipped) > 0 {
		t.Fatalf("adding the swap service: %v %v", skipped, err)
	}
}

// hasSwap reports whether reg serves the swap service.
func hasSwap(reg interface {
	Service(platform, name string) (*registry.Service, bool)
}) bool {
	p, n, _ := strings.Cut(testservices.SwapKey, "/")
	_, ok := reg.Service(p, n)
	return ok
}

// TestSwapServices: a swap adds and removes a service for the calls that
// start after it, the API a call already holds keeps its registry, MCP
// sessions are told, and a broken file is refused with its
// file:line:column first while the running services keep serving.
func TestSwapServices(t *testing.T) {
	dir := declarationsDir(t)
	a := provisionSwapApp(t, dir, 0)
	before := a.API(nil)
	h := &Handler{app: a, api: before}
	h.built = new(atomic.Pointer[builtAPI])
	if h.currentAPI().Registry != a.Registry() {
		t.Fatal("the handler does not serve the app's registry")
	}

	srv := httptest.NewServer(a.mcp)
	t.Cleanup(srv.Close)
	changed := make(chan struct{}, 10)
	cs := mcptest.Connect(t, srv.URL, "", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	waitChanged := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: no tools/list_changed", what)
		}
	}

	addSwapService(t, dir)
	res, err := a.SwapServices()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Added, []string{swapService}) || len(res.Removed) != 0 || res.Services != len(a.Registry().Services) {
		t.Fatalf("swap result %+v", res)
	}
	if !hasSwap(a.Registry()) {
		t.Fatal("the added service is not in the registry")
	}
	if hasSwap(before.Registry) {
		t.Fatal("the API built before the swap sees the new registry")
	}
	if got := h.currentAPI(); got.Registry != a.Registry() {
		t.Fatal("the handler still serves the old registry")
	}
	waitChanged("adding a service")
	if !slices.Contains(mcptest.ToolNames(t, cs), testservices.SwapTool) {
		t.Fatal("the MCP tools lack the added service")
	}

	// A broken file: refused, the first line its position, nothing swapped.
	serving := a.Registry()
	broken := filepath.Join(dir, testservices.SwapFile)
	b, _ := os.ReadFile(broken)
	if err := os.WriteFile(broken, []byte(strings.Replace(string(b), `max_inputs:       20`, `max_inputs:       "twenty"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = a.SwapServices()
	if err == nil {
		t.Fatal("a broken file was swapped in")
	}
	first := strings.SplitN(err.Error(), "\n", 2)[0]
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(broken) + `:\d+:\d+: `).MatchString(first) {
		t.Fatalf("first line of the error %q does not start with the file:line:column", first)
	}
	if a.Registry() != serving {
		t.Fatal("a refused swap changed the registry")
	}

	// Removing the service.
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	res, err = a.SwapServices()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{swapService}) || len(res.Added) != 0 {
		t.Fatalf("swap result %+v", res)
	}
	waitChanged("removing a service")
	if slices.Contains(mcptest.ToolNames(t, cs), testservices.SwapTool) {
		t.Fatal("the MCP tools still list the removed service")
	}
}

// TestWatchServices: with watch_services, a change to the directory is
// swapped in once it has been still for the debounce, and a broken one is
// not.
func TestWatchServices(t *testing.T) {
	dir := declarationsDir(t)
	a := provisionSwapApp(t, dir, 100*time.Millisecond)
	has := func() bool { return hasSwap(a.Registry()) }
	waitFor := func(want bool, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for has() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not swapped within 10s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	addSwapService(t, dir)
	waitFor(true, "adding a file")

	serving := a.Registry()
	if err := os.WriteFile(filepath.Join(dir, testservices.SwapFile), []byte("package sdr\nservices: {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // a debounce and a compile, several times over
	if a.Registry() != serving {
		t.Fatal("the watcher swapped in a broken file")
	}
	if err := os.Remove(filepath.Join(dir, testservices.SwapFile)); err != nil {
		t.Fatal(err)
	}
	waitFor(false, "removing the file")
}

// TestRegistryReloadRoute: POST /sdr/registry/reload answers the swap's
// result, 400 for a directory that does not compile, 405 for another
// method and 503 without the app.
func TestRegistryReloadRoute(t *testing.T) {
	dir := declarationsDir(t)
	a := provisionSwapApp(t, dir, 0)
	m := &Admin{app: a, h: a.admin(), built: new(atomic.Pointer[builtAdmin])}
	call := func(m *Admin, method string) (*httptest.ResponseRecorder, error) {
		w := httptest.NewRecorder()
		return w, m.reloadRegistry(w, httptest.NewRequest(method, "/sdr/registry/reload", nil))
	}
	status := func(err error) int {
		var e caddy.APIError
		if !errors.As(err, &e) {
			return 0
		}
		return e.HTTPStatus
	}

	addSwapService(t, dir)
	w, err := call(m, "POST")
	var res SwapResult
	if err != nil || json.Unmarshal(w.Body.Bytes(), &res) != nil || !slices.Equal(res.Added, []string{swapService}) {
		t.Fatalf("POST: %v %s", err, w.Body)
	}
	if err := os.WriteFile(filepath.Join(dir, testservices.SwapFile), []byte("package sdr\nservices: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := call(m, "POST"); status(err) != 400 || !strings.HasPrefix(err.Error(), filepath.Join(dir, testservices.SwapFile)+":") {
		t.Errorf("broken file: %v", err)
	}
	if _, err := call(m, "GET"); status(err) != 405 {
		t.Errorf("GET: %v", err)
	}
	if _, err := call(&Admin{}, "POST"); status(err) != 503 {
		t.Errorf("no app: %v", err)
	}
}

// TestWatchServicesCaddyfile: the watch_services option's forms.
func TestWatchServicesCaddyfile(t *testing.T) {
	for _, tt := range []struct {
		name, input string
		watch       bool
		debounce    time.Duration
		err         string
	}{
		{"absent", "social_router {\n}", false, 0, ""},
		{"on", "social_router {\n watch_services\n}", true, 0, ""},
		{"debounce", "social_router {\n watch_services 2s\n}", true, 2 * time.Second, ""},
		{"bad debounce", "social_router {\n watch_services soon\n}", false, 0, "positive duration"},
		{"zero debounce", "social_router {\n watch_services 0s\n}", false, 0, "positive duration"},
		{"two arguments", "social_router {\n watch_services 1s 2s\n}", false, 0, "wrong argument count"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := new(App)
			err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || a.WatchServices != tt.watch || time.Duration(a.WatchDebounce) != tt.debounce {
				t.Fatalf("%v: watch %v debounce %v", err, a.WatchServices, time.Duration(a.WatchDebounce))
			}
		})
	}
}
