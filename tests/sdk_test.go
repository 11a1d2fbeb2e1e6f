package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"socialrouter/caddymodule/testmode"
)

// The client libraries' own suites (sdk/go, sdk/typescript) run against
// the real binary and the simulator: this test starts both, a proxy that
// drops a POST's first connection, and runs each suite with where to find
// them in the environment:
//
//	SDR_BASE_URL          the gateway
//	SDR_ADMIN_URL         its admin endpoint (accounts, keys, webhooks)
//	SDR_FLAKY_URL         the dropping proxy in front of the gateway; GET /_flaky/log lists its POSTs
//	SDR_TEST_RETRY_AFTER  the Retry-After (seconds) of the magic input sdr-test-rate-limited
//
// Each suite creates its own accounts through the admin API. Its cases run
// on test keys (docs/testmode.md), the upstream failures forced by magic
// inputs; then the simulator must have seen no call and have no ledger
// entry. Last comes the suites' live-key part (tests named Live), what test
// mode cannot show: a call served by an upstream and charged to the live
// balance; the simulator must have seen it, so the check before could fail.

// sdkEnv starts the simulator, a gateway that accepts loopback webhook
// endpoints, and the dropping proxy, and returns the simulator and the
// suites' environment.
func sdkEnv(t *testing.T) (*sim, []string) {
	t.Helper()
	s := startSim(t)
	c := defaultConfig(t, s)
	c.AppExtra = "webhooks_allow_private\n\t\twebhooks_retry_schedule 1s 1s 1s"
	// The suites' request_timeout: sdr-test-slow, pinned to one offer,
	// outlasts it (async runs have their own deadline).
	c.AttemptTimeout = "3s"
	if testmode.SlowSeconds <= 3 {
		t.Fatalf("sdr-test-slow takes %d s, no longer than the 3 s attempt deadline the suites' request_timeout case needs", testmode.SlowSeconds)
	}
	g := startGateway(t, c)
	flaky := newFlakyProxy(t, g.URL)
	servedDocumentIsTheSDKs(t, g.URL)
	s.reset(t)
	s.clearLedger(t)
	return s, append(os.Environ(),
		"SDR_BASE_URL="+g.URL,
		"SDR_ADMIN_URL=http://"+g.Admin,
		"SDR_FLAKY_URL="+flaky.URL,
		"SDR_TEST_RETRY_AFTER="+strconv.Itoa(testmode.RetryAfterSeconds),
	)
}

// testKeysReachedNoUpstream fails when the simulator got a call or holds a
// ledger entry: the suites' test-key part has run, and test keys reach no
// upstream.
func testKeysReachedNoUpstream(t *testing.T, s *sim) {
	t.Helper()
	if calls := s.calls(t); len(calls) != 0 {
		t.Errorf("the simulator got %d calls from the suite's test keys, first %s %s", len(calls), calls[0].Protocol, calls[0].Target)
	}
	if jobs := s.ledger(t); len(jobs) != 0 {
		t.Errorf("the simulator's ledger has %d jobs from the suite's test keys", len(jobs))
	}
}

// liveKeyReachedTheSimulator fails when the live-key part left no trace at
// the simulator: then the check of the test-key part could not fail.
func liveKeyReachedTheSimulator(t *testing.T, s *sim) {
	t.Helper()
	if len(s.calls(t))+len(s.ledger(t)) == 0 {
		t.Error("the suite's live-key part left no trace at the simulator")
	}
}

// servedDocumentIsTheSDKs checks that the binary serves the document the
// SDKs were generated from (make sdk renders it offline from services/).
func servedDocumentIsTheSDKs(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, _ := io.ReadAll(resp.Body)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, served, "", "  "); err != nil {
		t.Fatalf("GET /v1/openapi.json: %v", err)
	}
	pretty.WriteByte('\n')
	committed, err := os.ReadFile(filepath.Join(repoRoot, "sdk", "openapi.json"))
	if err != nil || !bytes.Equal(committed, pretty.Bytes()) {
		t.Errorf("sdk/openapi.json is not the document the gateway serves (%v): run make sdk", err)
	}
}

// TestSDKGo runs sdk/go's tests with the race detector against the
// gateway (make check vets the module: cold, vet's facts about the
// standard library cost 100 s, which make check pays once for both
// modules).
func TestSDKGo(t *testing.T) {
	s, env := sdkEnv(t)
	dir := filepath.Join(repoRoot, "sdk", "go")
	runSuite(t, dir, env, "go", "test", "-race", "-count=1", "-v", "-skip", "Live", "./...")
	testKeysReachedNoUpstream(t, s)
	runSuite(t, dir, env, "go", "test", "-race", "-count=1", "-v", "-run", "Live", "./...")
	liveKeyReachedTheSimulator(t, s)
}

// TestSDKTypeScript runs sdk/typescript's npm test (tsc --strict, then
// node --test: the test-key files, then live.test.js) against the
// gateway; `make sdk-ts` installs its locked packages.
func TestSDKTypeScript(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm not found: the TypeScript SDK test needs Node 20 and npm: %v", err)
	}
	dir := filepath.Join(repoRoot, "sdk", "typescript")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openapi-fetch", "package.json")); err != nil {
		t.Fatalf("the TypeScript SDK's packages are not installed in %s: run `make sdk-ts` (%v)", dir, err)
	}
	s, env := sdkEnv(t)
	runSuite(t, dir, env, "npm", "run", "build", "--silent") // tsc --strict
	files, _ := filepath.Glob(filepath.Join(dir, "dist", "test", "*.test.js"))
	live := filepath.Join(dir, "dist", "test", "live.test.js")
	if !slices.Contains(files, live) || len(files) < 2 {
		t.Fatalf("test files %v: want the suite's and its live-key part, %s", files, live)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == live })
	runSuite(t, dir, env, "node", append([]string{"--test"}, files...)...)
	testKeysReachedNoUpstream(t, s)
	runSuite(t, dir, env, "node", "--test", live)
	liveKeyReachedTheSimulator(t, s)
}

// runSuite runs a command in dir and fails with its output when it fails;
// its lines are logged with a prefix, so that its own "--- SKIP" or "ok"
// lines are not read as this suite's.
func runSuite(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var b strings.Builder
	for sc.Scan() {
		fmt.Fprintf(&b, "  | %s\n", sc.Text())
	}
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, b.String())
	}
	if strings.Contains(string(out), "--- SKIP") || skippedTAP.MatchString(string(out)) {
		t.Errorf("%s %s skipped tests with the gateway's environment set:\n%s", name, strings.Join(args, " "), b.String())
	}
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), b.String())
}

// flakyProxy forwards to the gateway, but drops the client's connection on
// the first attempt of each POST /v1/… Idempotency-Key: the request reaches
// the gateway (which runs and bills it) and the answer never reaches the
// client, as when a connection breaks mid-call. The client's retry with
// the same key is forwarded.
type flakyProxy struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]bool
	log  []flakyEntry
}

type flakyEntry struct {
	Key     string `json:"key"`
	Path    string `json:"path"`
	Dropped bool   `json:"dropped"`
}

func newFlakyProxy(t *testing.T, target string) *flakyProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &flakyProxy{seen: map[string]bool{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_flaky/log" {
			p.mu.Lock()
			defer p.mu.Unlock()
			_ = json.NewEncoder(w).Encode(p.log)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if r.Method != http.MethodPost || key == "" || !strings.HasPrefix(r.URL.Path, "/v1/") {
			rp.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		drop := !p.seen[key]
		p.seen[key] = true
		p.log = append(p.log, flakyEntry{Key: key, Path: r.URL.Path, Dropped: drop})
		p.mu.Unlock()
		if !drop {
			rp.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		fwd, _ := http.NewRequest(r.Method, target+r.URL.RequestURI(), strings.NewReader(string(body)))
		fwd.Header = r.Header.Clone()
		sent := make(chan struct{})
		go func() {
			// Not tied to the client's request: the gateway's call runs to
			// its end, as it would behind a broken connection.
			resp, err := http.DefaultTransport.RoundTrip(fwd)
			close(sent)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		<-sent
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, not a clean close
			}
			conn.Close()
		}
	}))
	t.Cleanup(p.Close)
	return p
}

// skippedTAP matches the summary line of node --test's TAP output when it
// skipped tests.
var skippedTAP = regexp.MustCompile(`(?m)^# skipped [1-9]`)
