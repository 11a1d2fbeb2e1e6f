package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/internal/mcptest"
	"socialrouter/internal/testservices"
)

// swapCUE and swapExample are the test-only service
// open_net/sdr_test_swap.info (testservices.Swap, names no operator
// chooses) and its example payload, which the swap tests add and remove.
var (
	swapCUE     = testservices.File(testservices.Swap, testservices.SwapFile)
	swapExample = testservices.File(testservices.Swap, testservices.SwapExample)
)

// swapExamplePath is where the swap service's example goes in dir.
func swapExamplePath(dir string) string {
	return filepath.Join(dir, filepath.FromSlash(testservices.SwapExample))
}

// TestRegistrySwapUnderLoad: 20 clients call continuously (extract calls
// billed through the simulator, and catalogue reads) through 20 registry
// swaps that add and remove a service, one of them a broken file: no
// request fails and no connection is reset; the broken file is refused
// with its file:line:column first while the old registry keeps serving.
// The same load through 20 `caddy reload`s is printed beside it for
// comparison, not asserted (a reload restarts the HTTP servers), and such
// a reload says that only the services changed.
func TestRegistrySwapUnderLoad(t *testing.T) {
	s := startSim(t)
	svcDir := copyServices(t)
	c := defaultConfig(t, s)
	c.Services = svcDir
	c.AppExtra = "max_concurrent_runs 64" // 20 clients: the per-account cap of 16 is not under test
	g := startGateway(t, c)
	key := g.account("acme", 1000)
	s.fault(t, map[string]any{"target": companyB, "items": 1})
	added := filepath.Join(svcDir, testservices.SwapFile)

	step := func(i int) (wantOK bool) {
		switch {
		case i == 9: // a broken file among the swaps
			b := swapCUE
			writeFile(t, added, bytes.Replace(b, []byte(`max_inputs:       20`), []byte(`max_inputs:       "twenty"`), 1))
			return false
		case i%2 == 0:
			writeFile(t, added, swapCUE)
			writeFile(t, swapExamplePath(svcDir), swapExample)
		default:
			if err := os.Remove(added); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
		return true
	}

	swaps := runUnderLoad(t, g, key, func(i int) {
		wantOK := step(i)
		// ok: the swap was taken; msg: the answer, or for a refusal its
		// message (the compiler's, from the admin route's JSON or the
		// CLI's stderr).
		var ok bool
		var msg string
		if i%4 == 1 { // every fourth through the CLI
			out, err := exec.Command(caddyBin, "sdr", "services", "reload", "--address", g.Admin).CombinedOutput()
			ok, msg = err == nil, string(out)
		} else {
			status, body := g.admin("POST", "/sdr/registry/reload", nil)
			ok, msg = status == 200, string(body)
			var e struct{ Error string }
			if !ok && json.Unmarshal(body, &e) == nil && e.Error != "" {
				msg = e.Error
			}
		}
		if !wantOK {
			first, _, _ := strings.Cut(msg, "\n")
			if ok || !regexp.MustCompile(`^`+regexp.QuoteMeta(added)+`:\d+:\d+: `).MatchString(first) {
				t.Errorf("swap %d of a broken file: taken %v, first line %q\n%s", i, ok, first, msg)
			}
			// The swap before added the service: it still serves.
			if r := g.do("GET", "/v1/services/"+testservices.SwapKey, "", nil); r.Status != 200 {
				t.Errorf("after a refused swap: %d %s", r.Status, r.Body)
			}
			return
		}
		if !ok {
			t.Fatalf("swap %d: %s", i, msg)
		}
		forgetOpenAPI(g.URL)
		want := 200
		if i%2 == 1 {
			want = 404
		}
		if r := g.do("GET", "/v1/services/"+testservices.SwapKey, "", nil); r.Status != want {
			t.Errorf("after swap %d: GET the test service %d, want %d", i, r.Status, want)
		}
	})
	if swaps.requests < 200 {
		t.Errorf("only %d requests during the swaps: the load did not run", swaps.requests)
	}
	if swaps.failed != 0 || swaps.resets != 0 {
		t.Errorf("through 20 registry swaps: %d failed requests, %d connection errors (%s)", swaps.failed, swaps.resets, swaps.firstErr)
	}

	cfgPath := filepath.Join(g.Dir, "Caddyfile")
	reloads := runUnderLoad(t, g, key, func(i int) {
		wantOK := step(i)
		cmd := exec.Command(caddyBin, "reload", "--config", cfgPath, "--adapter", "caddyfile", "--address", g.Admin)
		if out, err := cmd.CombinedOutput(); (err == nil) != wantOK {
			t.Errorf("caddy reload %d: %v\n%s", i, err, out)
		}
	})
	t.Logf("20 clients, 20 changes of the services:\n"+
		"  registry swap (POST /sdr/registry/reload): %6d requests, %d failed, %d connection errors\n"+
		"  caddy reload:                              %6d requests, %d failed, %d connection errors (%s)",
		swaps.requests, swaps.failed, swaps.resets, reloads.requests, reloads.failed, reloads.resets, reloads.firstErr)
	if !strings.Contains(g.p.out.String(), "this reload changes only the services of the social_router app") {
		t.Error("no caddy reload said that only the services changed")
	}
}

// loadResult counts what the clients saw.
type loadResult struct {
	requests, failed, resets int64
	firstErr                 string
}

// runUnderLoad runs 20 clients against g while change(0..19) runs with a
// pause between changes, and returns what the clients saw. A client's
// requests alternate between an extract call (billed, through the
// simulator) and a catalogue read, on keep-alive connections.
func runUnderLoad(t *testing.T, g *gateway, key string, change func(i int)) loadResult {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 20, DisableCompression: true}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ctx, stop := context.WithCancel(context.Background())
	var requests, failed, resets atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	body := []byte(fmt.Sprintf(`{"url": %q}`, companyURL))
	for w := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil && n < 100000; n++ {
				var req *http.Request
				if (n+w)%2 == 0 {
					req, _ = http.NewRequest("POST", g.URL+"/v1/extract/pro_net/company.info", bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
				} else {
					req, _ = http.NewRequest("GET", g.URL+"/v1/services", nil)
				}
				requests.Add(1)
				resp, err := cl.Do(req)
				if err != nil {
					resets.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					resets.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				case resp.StatusCode != 200:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%s %s: %d", req.Method, req.URL.Path, resp.StatusCode))
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	for i := range 20 {
		change(i)
		time.Sleep(150 * time.Millisecond)
	}
	stop()
	wg.Wait()
	res := loadResult{requests: requests.Load(), failed: failed.Load(), resets: resets.Load()}
	if e, ok := firstErr.Load().(string); ok {
		res.firstErr = e
	}
	return res
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWatchServicesOption: with `watch_services 200ms`, a file added to
// the services directory is served without any call, and removing it
// removes the service.
func TestWatchServicesOption(t *testing.T) {
	svcDir := copyServices(t)
	c := defaultConfig(t, nil)
	c.Services = svcDir
	c.AppExtra = "watch_services 200ms"
	g := startGateway(t, c)
	status := func() int {
		r, err := http.Get(g.URL + "/v1/services/" + testservices.SwapKey)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if st := status(); st != 404 {
		t.Fatalf("before: %d", st)
	}
	writeFile(t, swapExamplePath(svcDir), swapExample)
	writeFile(t, filepath.Join(svcDir, testservices.SwapFile), swapCUE)
	waitUntilFor(t, 20*time.Second, func() bool { return status() == 200 })
	if err := os.Remove(filepath.Join(svcDir, testservices.SwapFile)); err != nil {
		t.Fatal(err)
	}
	waitUntilFor(t, 20*time.Second, func() bool { return status() == 404 })
}

func waitUntilFor(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached in %s", d)
		}
	}
}

// TestRegistrySwapMCP: an MCP session connected to the real binary is
// sent tools/list_changed by a registry swap that adds a service, lists
// its tool, and keeps calling tools on the same session; removing the
// service removes the tool.
func TestRegistrySwapMCP(t *testing.T) {
	s := startSim(t)
	svcDir := copyServices(t)
	c := defaultConfig(t, s)
	c.Services = svcDir
	g := startGateway(t, c)
	key := g.account("acme", 10)
	changed := make(chan struct{}, 10)
	cs := mcptest.Connect(t, g.URL+"/mcp", key, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	swap := func(what string, wantTool bool) {
		t.Helper()
		if st, b := g.admin("POST", "/sdr/registry/reload", nil); st != 200 {
			t.Fatalf("%s: %d %s", what, st, b)
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no tools/list_changed", what)
		}
		if got := slices.Contains(mcptest.ToolNames(t, cs), testservices.SwapTool); got != wantTool {
			t.Fatalf("%s: tool listed %v", what, got)
		}
		if isErr, bal := mcpCall(t, cs, "get_balance", nil); isErr || num(bal["balance"]) != 10 {
			t.Fatalf("%s: get_balance on the same session: %v", what, bal)
		}
	}
	writeFile(t, swapExamplePath(svcDir), swapExample)
	writeFile(t, filepath.Join(svcDir, testservices.SwapFile), swapCUE)
	swap("adding a service", true)
	if err := os.Remove(filepath.Join(svcDir, testservices.SwapFile)); err != nil {
		t.Fatal(err)
	}
	swap("removing it", false)
}
