// Package tests holds the black-box end-to-end suite: it builds (or takes
// from SDR_BIN / SDR_SIM_BIN) the real gateway binary and the upstream
// simulator, starts them with real Caddyfiles on loopback ports, and talks
// to them over HTTP only.
package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"
)

var (
	caddyBin string
	simBin   string
	repoRoot string
)

func TestMain(m *testing.M) {
	wd, _ := os.Getwd()
	repoRoot = filepath.Dir(wd)
	caddyBin, simBin = os.Getenv("SDR_BIN"), os.Getenv("SDR_SIM_BIN")
	if caddyBin == "" || simBin == "" {
		dir, err := os.MkdirTemp("", "sdr-e2e-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		caddyBin, simBin = filepath.Join(dir, "caddy"), filepath.Join(dir, "upstream-sim")
		for bin, pkg := range map[string]string{caddyBin: "./cmd/caddy", simBin: "./cmd/upstream-sim"} {
			cmd := exec.Command("go", "build", "-o", bin, pkg)
			cmd.Dir = repoRoot
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "building", pkg, err)
				os.Exit(1)
			}
		}
	}
	os.Exit(m.Run())
}

// handedOut holds the ports freePort has returned, so that two callers in
// one test never get the same port: the kernel may hand a just-closed port
// out again, and an admin endpoint and a server on one port answer each
// other's requests.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a loopback port that was free a moment ago and that no
// earlier call in this process returned.
func freePort(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
}

// proc is a child process whose output is kept for failure reports.
type proc struct {
	cmd *exec.Cmd
	out *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t testing.TB, env []string, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), out: &syncBuffer{}}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_, _ = p.cmd.Process.Wait()
		if t.Failed() {
			t.Logf("output of %s:\n%s", filepath.Base(name), tail(p.out.String(), 60))
		}
	})
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func waitFor(t testing.TB, what string, p *proc, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		if p != nil && p.cmd.ProcessState != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	out := ""
	if p != nil {
		out = tail(p.out.String(), 60)
	}
	t.Fatalf("%s did not come up in time:\n%s", what, out)
}

// sim is a running upstream simulator.
type sim struct {
	A, B string // base URLs of source_a (actor_run) and source_b (dataset_scrape)
	p    *proc
}

func startSim(t testing.TB, args ...string) *sim {
	t.Helper()
	// A port free a moment ago can be taken before the simulator binds it
	// (another process's ephemeral port): try fresh ports a few times.
	for try := 1; ; try++ {
		a, b := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
		s := &sim{A: "http://" + a, B: "http://" + b}
		s.p = start(t, nil, simBin, append([]string{"-a", a, "-b", b}, args...)...)
		if try < 3 && bindFailed(s.p) {
			continue
		}
		waitForSim(t, s)
		return s
	}
}

// bindFailed waits briefly for a process to either stay up or say it could
// not bind its address.
func bindFailed(p *proc) bool {
	for i := 0; i < 40; i++ {
		if strings.Contains(p.out.String(), "address already in use") {
			return true
		}
		if strings.Contains(p.out.String(), "serving") && i > 4 {
			return false
		}
		time.Sleep(25 * time.Millisecond)
	}
	return false
}

func waitForSim(t testing.TB, s *sim) {
	t.Helper()
	waitFor(t, "simulator", s.p, func() bool {
		r, err := http.Get(s.A + "/_sim/health")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	})
}

// fault sets a fault on one target (see the simulator's control endpoint).
func (s *sim) fault(t testing.TB, f map[string]any) {
	t.Helper()
	b, _ := json.Marshal(f)
	r, err := http.Post(s.A+"/_sim/faults", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode >= 300 {
		t.Fatalf("setting fault %s: %d %s", b, r.StatusCode, body)
	}
}

// simCall is one logged upstream call.
type simCall struct {
	Protocol string            `json:"protocol"`
	Target   string            `json:"target"`
	Query    map[string]string `json:"query"`
	Body     json.RawMessage   `json:"body"`
}

// calls returns the simulator's call log of both listeners.
func (s *sim) calls(t testing.TB) []simCall {
	t.Helper()
	r, err := http.Get(s.A + "/_sim/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var out []simCall
	if err := json.NewDecoder(r.Body).Decode(&out); err != nil {
		t.Fatalf("decoding call log: %v", err)
	}
	return out
}

func (s *sim) reset(t testing.TB) {
	t.Helper()
	for _, p := range []string{"/_sim/faults", "/_sim/calls"} {
		req, _ := http.NewRequest(http.MethodDelete, s.A+p, nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}
}

// gwConfig is the template data of a test gateway's Caddyfile.
type gwConfig struct {
	Port, AdminPort int
	Services        string
	Storage         string // "badger <dir>" or "postgres <url>"
	SimA, SimB      string
	RateCount       int
	RateStore       string // "" or "store redis <url>"
	AttemptTimeout  string
	SoftTimeout     string
	Site            string // site address; default :<Port>
	Global          string // extra global options
	SiteExtra       string
	Token           string // upstream bearer token of both sources
	AppExtra        string // extra social_router options
	SourceExtra     string // extra options of both source blocks
}

const gwTemplate = `{
	admin 127.0.0.1:{{.AdminPort}}
	skip_install_trust
	{{.Global}}
	social_router {
		services {{.Services}}
		storage {{.Storage}}
		source source_a {
			base_url {{.SimA}}
			{{if .Token}}token {{.Token}}{{end}}
			{{.SourceExtra}}
		}
		source source_b {
			base_url {{.SimB}}
			{{if .Token}}token {{.Token}}{{end}}
			{{.SourceExtra}}
		}
		attempt_timeout {{.AttemptTimeout}}
		soft_timeout {{.SoftTimeout}}
		poll_interval 50ms
		{{.AppExtra}}
	}
}

{{.Site}} {
	{{.SiteExtra}}
	ip_rate_limit {{.RateCount}} 60s {{if .RateStore}}{
		{{.RateStore}}
	}{{end}}
	social_router
}
`

// gateway is a running gateway process.
type gateway struct {
	URL   string
	Admin string
	Dir   string
	Cfg   gwConfig
	p     *proc
	t     testing.TB
}

func defaultConfig(t testing.TB, s *sim) gwConfig {
	dir := t.TempDir()
	c := gwConfig{
		Port: freePort(t), AdminPort: freePort(t),
		Services:  filepath.Join(repoRoot, "services"),
		Storage:   "badger " + filepath.Join(dir, "data"),
		RateCount: 100000, AttemptTimeout: "10s", SoftTimeout: "2s",
	}
	if s != nil {
		c.SimA, c.SimB = s.A, s.B
	} else {
		c.SimA, c.SimB = "http://127.0.0.1:1", "http://127.0.0.1:1"
	}
	return c
}

func writeCaddyfile(t testing.TB, dir string, c gwConfig) string {
	t.Helper()
	if c.Site == "" {
		c.Site = fmt.Sprintf(":%d", c.Port)
	}
	var buf bytes.Buffer
	if err := template.Must(template.New("c").Parse(gwTemplate)).Execute(&buf, c); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func startGateway(t testing.TB, c gwConfig, env ...string) *gateway {
	t.Helper()
	dir := t.TempDir()
	path := writeCaddyfile(t, dir, c)
	g := &gateway{
		URL: fmt.Sprintf("http://127.0.0.1:%d", c.Port), Admin: fmt.Sprintf("127.0.0.1:%d", c.AdminPort),
		Dir: dir, Cfg: c, t: t,
	}
	env = append(env, "XDG_DATA_HOME="+filepath.Join(dir, "xdg-data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg-config"))
	g.p = start(t, env, caddyBin, "run", "--config", path, "--adapter", "caddyfile")
	waitFor(t, "gateway", g.p, func() bool {
		r, err := http.Get(fmt.Sprintf("http://%s/config/", g.Admin))
		if err != nil {
			return false
		}
		r.Body.Close()
		if c.Site != "" && !strings.HasPrefix(c.Site, ":") {
			return r.StatusCode == 200
		}
		// A TCP connection, not a request: requests count against the
		// per-IP rate limit under test.
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.Port), time.Second)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
	return g
}

// admin calls the gateway's admin API.
func (g *gateway) admin(method, path string, body any) (int, []byte) {
	g.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+g.Admin+path, rd)
	req.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("admin %s %s: %v", method, path, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, b
}

// account creates an account with a balance and returns a new key for it.
func (g *gateway) account(id string, balance float64) string {
	g.t.Helper()
	if st, b := g.admin("POST", "/sdr/accounts", map[string]any{"id": id, "balance": balance}); st != 201 {
		g.t.Fatalf("creating account: %d %s", st, b)
	}
	return g.key(id, nil)
}

func (g *gateway) key(account string, limit map[string]any) string {
	g.t.Helper()
	body := map[string]any{"name": "test"}
	if limit != nil {
		body["credit_limit"] = limit
	}
	st, b := g.admin("POST", "/sdr/accounts/"+account+"/keys", body)
	if st != 201 {
		g.t.Fatalf("creating key: %d %s", st, b)
	}
	var k struct{ Key string }
	_ = json.Unmarshal(b, &k)
	return k.Key
}

// response is a decoded API answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any
}

// errCode returns error.code of an error envelope.
func (r *response) errCode() string {
	if e, ok := r.JSON["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

func (r *response) errField(k string) any {
	if e, ok := r.JSON["error"].(map[string]any); ok {
		return e[k]
	}
	return nil
}

// do sends one API request; body may be nil, a string (sent raw) or a value
// (sent as JSON).
func (g *gateway) do(method, path, key string, body any) *response {
	g.t.Helper()
	return doURL(g.t, method, g.URL+path, key, body)
}

var client = &http.Client{Timeout: 60 * time.Second}

func doURL(t testing.TB, method, url, key string, body any) *response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	auth := ""
	if key != "" {
		auth = "Bearer " + key
	}
	return send(t, method, url, auth, rd)
}

// doURLAuth sends a request with a raw Authorization header value.
func doURLAuth(t testing.TB, method, url, auth string) *response {
	t.Helper()
	return send(t, method, url, auth, nil)
}

func send(t testing.TB, method, url, auth string, rd io.Reader) *response {
	t.Helper()
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	r, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	resp := &response{Status: r.StatusCode, Header: r.Header, Body: b}
	_ = json.Unmarshal(b, &resp.JSON)
	validateAgainstOpenAPI(t, req, r, b)
	return resp
}

// balance returns the account balance through the API.
func (g *gateway) balance(key string) float64 {
	g.t.Helper()
	r := g.do("GET", "/v1/account/balance", key, nil)
	if r.Status != 200 {
		g.t.Fatalf("balance: %d %s", r.Status, r.Body)
	}
	f, _ := r.JSON["balance"].(float64)
	return f
}

func newJSONRequest(method, url, key, body string) (*http.Request, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return req, nil
}
