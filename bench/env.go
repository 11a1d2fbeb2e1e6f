package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

// The measured service and its upstream: pro_net/profile.info is served by
// source_b's dataset gd_l1viktl72bvl7bjuj0 (dataset_scrape protocol).
const (
	benchDataset = "gd_l1viktl72bvl7bjuj0"
	benchInput   = "https://www.linkedin.com/in/rbranson"
	benchAccount = "bench"
)

// workload is the extraction measured at N records. pro_net/profile.info
// declares records_per_input 1 (a profile is one record), and a call's
// hold covers no more (issue 10): the gateway serves one record of
// however many the upstream sends. N > 1 is therefore pro_net/profile.posts
// (limit N per input) on source_b's dataset gd_lyy3tktm25m4avu764, the
// same dataset_scrape protocol; N = 1 stays profile.info.
type workload struct {
	service, dataset, query, body string
}

func benchWorkload(n int) workload {
	if n <= 1 {
		return workload{"pro_net/profile.info", benchDataset, "", `{"url":"` + benchInput + `"}`}
	}
	return workload{"pro_net/profile.posts", "gd_lyy3tktm25m4avu764", "&type=discover_new&discover_by=profile_url",
		fmt.Sprintf(`{"url":%q,"limit":%d}`, benchInput, n)}
}

// env is the running simulator and gateway, with an account and key.
type env struct {
	dir                 string
	sim, gw             *child
	simA, simB          string // simulator base URLs
	admin               string // gateway admin address host:port
	gwURL, refURL, stat string // gateway, reverse_proxy and static sites
	key                 string
	runID               string
	runBody, catalogue  []byte
	client              *http.Client
	startHWM, startAnon int64 // KiB, the gateway's VmHWM and RssAnon once started
}

// caddyfile is the gateway's configuration: the gateway site as in
// production (rate limiter with a count it never reaches, social_router on
// badger with fsync), a reverse_proxy site to the simulator and a static
// site, all in one process.
const caddyfile = `{
	admin 127.0.0.1:{{.Admin}}
	skip_install_trust
	persist_config off
	auto_https off
	social_router {
		services {{.Services}}
		storage {{if .Postgres}}postgres {{.Postgres}}{{else}}badger {{.Data}}{{end}}
		source source_a {
			base_url {{.SimA}}
			{{.SourceExtra}}
		}
		source source_b {
			base_url {{.SimB}}
			{{.SourceExtra}}
		}
		max_concurrent_runs 100000
		# N = 10 is a discovery: trigger, progress polls and the download;
		# polled at once so the figure is their round trips, not a sleep.
		poll_interval 1ms
		{{.AppExtra}}
	}
{{- if .H2C}}
	servers {
		protocols h1 h2c
	}
{{- end}}
}

:{{.GW}} {
	bind 127.0.0.1
	ip_rate_limit 100000000 60s
	social_router
}

:{{.Ref}} {
	bind 127.0.0.1
	reverse_proxy {{.SimBHost}}
}

:{{.Static}} {
	bind 127.0.0.1
	handle /services {
		respond <<SDR_BENCH_CATALOGUE
{{.Catalogue}}
SDR_BENCH_CATALOGUE 200
	}
	handle /run {
		respond <<SDR_BENCH_RUN
{{.Run}}
SDR_BENCH_RUN 200
	}
}
`

type caddyfileData struct {
	Admin, GW, Ref, Static int
	Services, Data         string
	Postgres               string // the store's PostgreSQL URL (pg-e2e phase); empty: badger in Data
	SimA, SimB, SimBHost   string
	Catalogue, Run         string
	H2C                    bool   // serve HTTP/2 cleartext too (the in-flight phase's callers over h2c)
	AppExtra               string // more social_router options (the async phase's)
	SourceExtra            string // more options of both source blocks (the async phase's callbacks)
}

// startEnv starts the simulator and the gateway, creates an account with a
// balance no run can exhaust and a key, settles one run, and restarts the
// gateway with static bodies of the same sizes as the catalogue and that
// run (so the references answer as many bytes as the gateway).
func startEnv(ctx context.Context, tmp string, cfg *config, catalogue []byte) (*env, error) {
	e := &env{dir: tmp, catalogue: catalogue, client: newClient(cfg.conc)}
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	a, b := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	e.simA, e.simB = "http://"+a, "http://"+b
	sim, err := startChild("upstream-sim", filepath.Join(tmp, "sim.log"), nil, cfg.simBin, "-a", a, "-b", b, "-latency", "0")
	if err != nil {
		return nil, err
	}
	e.sim = sim
	if err := waitHTTP(ctx, sim, e.simA+"/_sim/health"); err != nil {
		return nil, err
	}
	logf("simulator on %s and %s", e.simA, e.simB)

	d := caddyfileData{
		Admin: ports[2], GW: ports[3], Ref: ports[4], Static: ports[5],
		Services: cfg.services, Data: filepath.Join(tmp, "badger"),
		SimA: e.simA, SimB: e.simB, SimBHost: b,
		Catalogue: braceless(catalogue), Run: "pending",
	}
	e.addresses(d)

	if err := e.startGateway(ctx, cfg, d, "caddy-1.log"); err != nil {
		return nil, err
	}
	if err := e.setItems(ctx, 10); err != nil {
		return nil, err
	}
	if err := e.createAccount(ctx); err != nil {
		return nil, err
	}
	st, body, err := e.extractTarget(10).fetch(ctx, e.client)
	if err != nil || st != http.StatusOK {
		return nil, fmt.Errorf("first extraction: %d %v: %s", st, err, clip(body))
	}
	var run struct {
		ID   string            `json:"id"`
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &run); err != nil || len(run.Data) != 10 {
		return nil, fmt.Errorf("first extraction: want 10 records, got %d (%v): %s", len(run.Data), err, clip(body))
	}
	e.runID = run.ID
	st, e.runBody, err = e.runTarget().fetch(ctx, e.client)
	if err != nil || st != http.StatusOK {
		return nil, fmt.Errorf("reading run %s: %d %v", run.ID, st, err)
	}
	e.gw.stop()
	logf("restarting the gateway with a static run body of %d bytes", len(e.runBody))

	d.Run = braceless(e.runBody)
	if err := e.startGateway(ctx, cfg, d, "caddy-2.log"); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		t    *target
		want []byte
	}{{e.staticTarget("/services"), catalogue}, {e.staticTarget("/run"), e.runBody}} {
		st, got, err := c.t.fetch(ctx, e.client)
		if err != nil || st != http.StatusOK || len(got) != len(c.want) {
			return nil, fmt.Errorf("static %s answers %d, %d bytes (%v); want 200, %d bytes", c.t.url, st, len(got), err, len(c.want))
		}
	}
	st, got, err := e.servicesTarget().fetch(ctx, e.client)
	if err != nil || st != http.StatusOK || len(got) != len(catalogue) {
		return nil, fmt.Errorf("GET /v1/services answers %d, %d bytes (%v); the compiled catalogue has %d", st, len(got), err, len(catalogue))
	}
	e.startHWM, e.startAnon = memKiB(e.gw.cmd.Process.Pid, "VmHWM"), memKiB(e.gw.cmd.Process.Pid, "RssAnon")
	return e, nil
}

// addresses sets e's admin and site addresses from the ports of d.
func (e *env) addresses(d caddyfileData) {
	e.admin = fmt.Sprintf("127.0.0.1:%d", d.Admin)
	e.gwURL = fmt.Sprintf("http://127.0.0.1:%d", d.GW)
	e.refURL = fmt.Sprintf("http://127.0.0.1:%d", d.Ref)
	e.stat = fmt.Sprintf("http://127.0.0.1:%d", d.Static)
}

// startGateway writes the Caddyfile and starts the gateway on it.
func (e *env) startGateway(ctx context.Context, cfg *config, d caddyfileData, logName string) error {
	var buf bytes.Buffer
	if err := template.Must(template.New("c").Parse(caddyfile)).Execute(&buf, d); err != nil {
		return err
	}
	path := filepath.Join(e.dir, "Caddyfile")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return err
	}
	env := []string{
		"XDG_DATA_HOME=" + filepath.Join(e.dir, "xdg-data"),
		"XDG_CONFIG_HOME=" + filepath.Join(e.dir, "xdg-config"),
	}
	gw, err := startChild("gateway", filepath.Join(e.dir, logName), env, cfg.caddyBin, "run", "--config", path, "--adapter", "caddyfile")
	if err != nil {
		return err
	}
	e.gw = gw
	if err := waitHTTP(ctx, gw, e.gwURL+"/v1/services"); err != nil {
		return err
	}
	logf("gateway pid %d on %s (reverse_proxy %s, static %s, admin %s)", gw.cmd.Process.Pid, e.gwURL, e.refURL, e.stat, e.admin)
	return nil
}

// setItems makes the simulator answer n records per input for the dataset
// of benchWorkload(n).
func (e *env) setItems(ctx context.Context, n int) error {
	body, _ := json.Marshal(map[string]any{"target": benchWorkload(n).dataset, "items": n})
	st, b, err := e.post(ctx, e.simA+"/_sim/faults", body)
	if err != nil || st >= 300 {
		return fmt.Errorf("setting %d items on the simulator: %d %v %s", n, st, err, clip(b))
	}
	return nil
}

// createAccount creates the bench account and its key through the admin
// API.
func (e *env) createAccount(ctx context.Context) error {
	body, _ := json.Marshal(map[string]any{"id": benchAccount, "balance": 1_000_000_000})
	st, b, err := e.post(ctx, "http://"+e.admin+"/sdr/accounts", body)
	if err != nil || st != http.StatusCreated {
		return fmt.Errorf("creating account: %d %v %s", st, err, clip(b))
	}
	st, b, err = e.post(ctx, "http://"+e.admin+"/sdr/accounts/"+benchAccount+"/keys", []byte(`{"name":"bench"}`))
	if err != nil || st != http.StatusCreated {
		return fmt.Errorf("creating key: %d %v %s", st, err, clip(b))
	}
	var k struct{ Key string }
	if err := json.Unmarshal(b, &k); err != nil || !strings.HasPrefix(k.Key, "sdr_live_") {
		return fmt.Errorf("creating key: no key in %s", clip(b))
	}
	e.key = k.Key
	return nil
}

func (e *env) post(ctx context.Context, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func jsonHeader() http.Header {
	return http.Header{"Content-Type": {"application/json"}}
}

// extractTarget is the extraction of n records (benchWorkload) through
// the gateway.
func (e *env) extractTarget(n int) *target {
	h := jsonHeader()
	h.Set("Authorization", "Bearer "+e.key)
	wl := benchWorkload(n)
	return &target{
		name: "gateway", method: http.MethodPost, url: e.gwURL + "/v1/extract/" + wl.service,
		body: []byte(wl.body), header: h,
	}
}

// proxyTarget is the same upstream call through Caddy's reverse_proxy: the
// request the gateway makes for one input, answered by the same payload.
func (e *env) proxyTarget(n int) *target {
	wl := benchWorkload(n)
	return &target{
		name: "reverse_proxy", method: http.MethodPost,
		// The same rows from /scrape: discovery is refused there (the
		// gateway triggers it and polls the snapshot), so the reference
		// asks for the dataset's rows without the discovery parameters.
		url:  e.refURL + "/datasets/v3/scrape?dataset_id=" + wl.dataset + "&format=json&include_errors=true",
		body: []byte(`{"input":[{"url":"` + benchInput + `"}]}`), header: jsonHeader(),
	}
}

func (e *env) servicesTarget() *target {
	return &target{name: "GET /v1/services", method: http.MethodGet, url: e.gwURL + "/v1/services", header: http.Header{}}
}

func (e *env) runTarget() *target {
	return &target{
		name: "GET /v1/extractions/{id}", method: http.MethodGet, url: e.gwURL + "/v1/extractions/" + e.runID,
		header: http.Header{"Authorization": {"Bearer " + e.key}},
	}
}

func (e *env) staticTarget(path string) *target {
	return &target{name: "respond " + path, method: http.MethodGet, url: e.stat + path, header: http.Header{}}
}

// pids are the processes whose CPU time a round accounts for.
func (e *env) pids() map[string]int {
	return map[string]int{"gateway": e.gw.cmd.Process.Pid, "sim": e.sim.cmd.Process.Pid, "loadgen": os.Getpid()}
}

// measure runs one round and records the CPU time each process used in it.
func (e *env) measure(ctx context.Context, t *target, conc int, dur time.Duration, max int64) round {
	return measureCPU(ctx, e.client, t, conc, dur, max, pidClocks(e.pids()))
}

// pidClocks reads the CPU time of each process of pids (cpuTime).
func pidClocks(pids map[string]int) map[string]func() time.Duration {
	clocks := map[string]func() time.Duration{}
	for name, pid := range pids {
		clocks[name] = func() time.Duration { return cpuTime(pid) }
	}
	return clocks
}

// measureCPU runs one round and records the CPU time each clock counted in
// it.
func measureCPU(ctx context.Context, c *http.Client, t *target, conc int, dur time.Duration, max int64, clocks map[string]func() time.Duration) round {
	before := map[string]time.Duration{}
	for name, clock := range clocks {
		before[name] = clock()
	}
	r := runRound(ctx, c, t, conc, dur, max)
	r.cpu = map[string]time.Duration{}
	for name, clock := range clocks {
		r.cpu[name] = clock() - before[name]
	}
	return r
}

// pair measures two targets in rounds interleaved, A B A B …, after an
// unmeasured warm-up of each.
func (e *env) pair(ctx context.Context, cfg *config, a, b *target, rounds int, dur time.Duration, label string) (summary, summary, error) {
	runRound(ctx, e.client, a, cfg.conc, cfg.warm, cfg.max)
	runRound(ctx, e.client, b, cfg.conc, cfg.warm, cfg.max)
	var ra, rb []round
	for i := 0; i < rounds; i++ {
		x := e.measure(ctx, a, cfg.conc, dur, cfg.max)
		y := e.measure(ctx, b, cfg.conc, dur, cfg.max)
		if err := ctx.Err(); err != nil {
			return summary{}, summary{}, err
		}
		logf("%s round %d: %s %.0f req/s (%d failed), %s %.0f req/s (%d failed)",
			label, i+1, a.name, x.rps(), x.failed, b.name, y.rps(), y.failed)
		ra, rb = append(ra, x), append(rb, y)
	}
	return summarize(a.name, ra), summarize(b.name, rb), nil
}

// braceless returns b with its braces turned into parentheses: the same
// number of bytes, in which respond's placeholder pass finds nothing to
// replace (a JSON body would make it parse every {…} as a placeholder, a
// cost the gateway does not pay), and which the Caddyfile heredoc takes
// verbatim.
func braceless(b []byte) string {
	return strings.NewReplacer("{", "(", "}", ")").Replace(string(b))
}

// clip shortens a body for an error message.
func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
