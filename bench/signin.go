package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/template"
	"time"
)

// The sign-in load phase (issue 24): bad sign-ins and invitation posts by
// the dozen in parallel while /v1 is measured. Every password check is an
// argon2id hash (19 MiB, ~30 ms of a core): unbounded, such a flood took
// /v1's p50 from 3 to 600 ms and the heap to 2.5 GB. The figures: /v1's
// p50 under attack over its idle p50 (target ≤ 2 ×), the gateway's RSS
// growth (target < 200 MB), and the attack's answers (401, 404, 429 and
// 503 only: no other 5xx).
const signinCaddyfile = `{
	admin 127.0.0.1:{{.Admin}}
	skip_install_trust
	persist_config off
	auto_https off
	social_router {
		services {{.Services}}
		storage badger {{.Data}}
		source source_a {
			base_url {{.SimA}}
		}
		source source_b {
			base_url {{.SimB}}
		}
		max_concurrent_runs 100000
	}
}

:{{.GW}} {
	bind 127.0.0.1
	ip_rate_limit 100000000 60s
	handle /bench-static {
		respond 204
	}
	social_router
	sdr_dashboard
}
`

const (
	signinMember    = "member@bench.example"
	signinPassword  = "a bench member's password"
	signinAttackers = 64 // parallel bad sign-ins
	inviteAttackers = 32 // parallel invitation posts with guessed tokens
	signinMeasurers = 4  // parallel /v1 calls, idle and under attack
)

// signinResult is one attack: the /v1 latencies under it, the gateway's
// RSS, and the attack's answers by status.
type signinResult struct {
	addrs              int
	v1                 round
	rssBefore, rssPeak int64 // KiB
	signin, invite     map[int]int
	errors             int
	cpu                time.Duration // the gateway's CPU time during the attack
	skipped            int           // paced sends skipped: pacedOutstanding unanswered
	plan               attackPlan
	static             *signinResult // the static reference at the attack's rate
}

// answers counts the attack's answered requests.
func (r signinResult) answers() int {
	n := 0
	for _, m := range []map[int]int{r.signin, r.invite} {
		for _, c := range m {
			n += c
		}
	}
	return n
}

// load names the plan's load: parallel workers or a pace.
func (p attackPlan) load() string {
	if p.rate > 0 {
		return fmt.Sprintf("%.0f/s", p.rate)
	}
	return fmt.Sprintf("%d parallel", signinAttackers+inviteAttackers)
}

func (rep *report) signinLoad(ctx context.Context, tmp string, cfg *config) error {
	dir := filepath.Join(tmp, "signin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	e := &env{dir: dir, client: newClient(signinMeasurers)}
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	a, b := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	e.simA, e.simB = "http://"+a, "http://"+b
	if e.sim, err = startChild("upstream-sim", filepath.Join(dir, "sim.log"), nil, cfg.simBin, "-a", a, "-b", b, "-latency", "0"); err != nil {
		return err
	}
	defer e.sim.stop()
	if err := waitHTTP(ctx, e.sim, e.simA+"/_sim/health"); err != nil {
		return err
	}
	d := caddyfileData{Admin: ports[2], GW: ports[3], Services: cfg.services, Data: filepath.Join(dir, "badger"), SimA: e.simA, SimB: e.simB}
	e.addresses(d)
	var buf bytes.Buffer
	if err := template.Must(template.New("c").Parse(signinCaddyfile)).Execute(&buf, d); err != nil {
		return err
	}
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return err
	}
	xdg := []string{"XDG_DATA_HOME=" + filepath.Join(dir, "xdg-data"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg-config")}
	if cfg.signinHashSlots > 0 {
		buf = *bytes.NewBufferString(strings.Replace(buf.String(), "\tsdr_dashboard\n", fmt.Sprintf("\tsdr_dashboard {\n\t\thash_slots %d\n\t}\n", cfg.signinHashSlots), 1))
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if e.gw, err = startChild("gateway", filepath.Join(dir, "caddy.log"), xdg, cfg.caddyBin, "run", "--config", path, "--adapter", "caddyfile"); err != nil {
		return err
	}
	defer e.gw.stop()
	if err := waitHTTP(ctx, e.gw, e.gwURL+"/v1/services"); err != nil {
		return err
	}
	if err := e.setItems(ctx, 1); err != nil {
		return err
	}
	if err := e.createAccount(ctx); err != nil {
		return err
	}
	if err := e.addMember(ctx); err != nil {
		return err
	}
	v1 := e.extractTarget(1)
	if st, body, err := v1.fetch(ctx, e.client); err != nil || st != http.StatusOK {
		return fmt.Errorf("first extraction: %d %v %s", st, err, clip(body))
	}
	pid := e.gw.cmd.Process.Pid
	logf("sign-in load: gateway pid %d on %s", pid, e.gwURL)

	runRound(ctx, e.client, v1, signinMeasurers, cfg.warm, cfg.max) // warm-up
	idle := runRound(ctx, e.client, v1, signinMeasurers, cfg.signinIdle, cfg.max)
	idleP50 := percentile(idle.lat, 0.5)
	logf("sign-in load: /v1 idle p50 %.1f ms (%d calls)", ms(idleP50), idle.ok)

	ref := e.attack(ctx, cfg, v1, attackPlan{mode: attackPage, addrs: 1}, "page")
	refP50 := percentile(ref.v1.lat, 0.5)
	logf("sign-in load, reference flood of GET /dashboard/signin: /v1 p50 %.1f ms, %v", ms(refP50), ref.signin)
	var results []signinResult
	for _, n := range cfg.signinAddrs {
		plans := []attackPlan{{mode: attackPosts, addrs: n}}
		if cfg.signinRate > 0 {
			plans = append(plans, attackPlan{mode: attackPosts, addrs: n, rate: cfg.signinRate})
		}
		for _, p := range plans {
			name := fmt.Sprintf("%daddr-parallel", n)
			if p.rate > 0 {
				name = fmt.Sprintf("%daddr-paced", n)
			}
			r := e.attack(ctx, cfg, v1, p, name)
			r.plan = p
			logf("sign-in load, %d client address(es), %s: /v1 p50 %.1f ms, RSS %d → %d MiB, sign-in %v, invite %v, errors %d",
				n, p.load(), ms(percentile(r.v1.lat, 0.5)), r.rssBefore/1024, r.rssPeak/1024, r.signin, r.invite, r.errors)
			if p.rate == 0 {
				// The same number of requests a second, of the cheapest route:
				// what the load alone (generator and gateway on the same
				// cores) does to /v1, whatever the route does.
				rate := float64(r.answers()) / cfg.signinAttack.Seconds()
				st := e.attack(ctx, cfg, v1, attackPlan{mode: attackStatic, addrs: n, rate: rate}, name+"-static")
				r.static = &st
				logf("sign-in load, static reference at %.0f/s: /v1 p50 %.1f ms", rate, ms(percentile(st.v1.lat, 0.5)))
			}
			results = append(results, r)
		}
	}

	w := rep.section("8")
	fmt.Fprintf(w, "8. Sign-in load (issue 24): %d parallel bad sign-ins (half at a member's email, half at unknown ones) and %d parallel\n", signinAttackers, inviteAttackers)
	fmt.Fprintf(w, "   invitation posts with guessed tokens for %s, while %d callers make the N = 1 extraction of 1 (/v1); then the same posts\n", cfg.signinAttack, signinMeasurers)
	fmt.Fprintf(w, "   paced at %.0f a second (2 sign-ins to 1 invitation post, sent whether or not answered: the issue's scenario);\n", cfg.signinRate)
	fmt.Fprintf(w, "   the default sdr_dashboard limits, hash pool of %s; the attackers spread over 1 or more loopback source addresses\n", slotsText(cfg.signinHashSlots))
	fmt.Fprintf(w, "   /v1 idle: p50 %.1f ms, p99 %.1f ms over %d calls in %s\n", ms(idleP50), ms(percentile(idle.lat, 0.99)), idle.ok, cfg.signinIdle)
	fmt.Fprintf(w, "   reference: the same %d workers flooding GET /dashboard/signin (no password check) for %s: /v1 p50 %.1f ms (%.2f × idle), %s, %.0f answers/s\n",
		signinAttackers+inviteAttackers, cfg.signinAttack, ms(refP50), float64(refP50)/float64(max(idleP50, time.Microsecond)), statusText(ref.signin)+" "+statusText(ref.invite),
		float64(ref.answers())/cfg.signinAttack.Seconds())
	fmt.Fprintf(w, "   gateway CPU during the reference flood: %.1f s of %.0f s (%d cores)\n", ref.cpu.Seconds(), cfg.signinAttack.Seconds()*float64(runtime.NumCPU()), runtime.NumCPU())
	fmt.Fprintf(w, "    %5s %-11s %8s %9s %9s %8s %9s %9s %-28s %-28s %6s\n", "addrs", "load", "answers/s", "v1 p50", "v1 p99", "p50 ×", "RSS MiB", "growth", "sign-in answers", "invite answers", "errors")
	for _, r := range results {
		p50 := percentile(r.v1.lat, 0.5)
		ratio := float64(p50) / float64(max(idleP50, time.Microsecond))
		growthMB := float64(max(r.rssPeak-r.rssBefore, 0)) * 1024 / 1e6
		bad := badStatuses(r.signin) + badStatuses(r.invite)
		fmt.Fprintf(w, "    %5d %-11s %8.0f %7.1fms %7.1fms %7.2f× %9d %6.0f MB %-28s %-28s %6d  v1 calls %d (%d failed), gateway CPU %.1f s",
			r.addrs, r.plan.load(), float64(r.answers())/cfg.signinAttack.Seconds(), ms(p50), ms(percentile(r.v1.lat, 0.99)), ratio, r.rssPeak/1024, growthMB,
			statusText(r.signin), statusText(r.invite), r.errors, r.v1.ok, r.v1.failed, r.cpu.Seconds())
		if r.skipped > 0 {
			fmt.Fprintf(w, ", %d paced sends skipped (%d unanswered)", r.skipped, pacedOutstanding)
		}
		fmt.Fprintln(w)
		what := fmt.Sprintf("sign-in load, %d address(es), %s:", r.addrs, r.plan.load())
		fmt.Fprintf(w, "          /v1 p50 under attack / idle %.2f ×  target ≤ 2 ×  %s  (/ the page flood's %.2f ×);  RSS growth %.0f MB  target < 200 MB  %s;  other statuses %d  target 0  %s\n",
			ratio, mark(ratio <= 2), float64(p50)/float64(max(refP50, time.Microsecond)), growthMB, mark(growthMB < 200), bad, mark(bad == 0))
		rep.check(what+" /v1 p50 attack/idle", fmt.Sprintf("%.2f ×", ratio), "≤ 2 ×", ratio <= 2)
		if st := r.static; st != nil {
			sp50 := percentile(st.v1.lat, 0.5)
			sratio := float64(p50) / float64(max(sp50, time.Microsecond))
			fmt.Fprintf(w, "          reference: GET /bench-static (respond 204) at the same %.0f requests/s from %d address(es): /v1 p50 %.1f ms (%.2f × idle), CPU %.1f s; the attack / it %.2f ×\n",
				float64(r.answers())/cfg.signinAttack.Seconds(), r.addrs, ms(sp50), float64(sp50)/float64(max(idleP50, time.Microsecond)), st.cpu.Seconds(), sratio)
			rep.info(what+" /v1 p50 attack/static flood of the same rate", fmt.Sprintf("%.2f ×", sratio),
				"the load itself: a trivial route at the attack's rate")
		}
		rep.info(what+" /v1 p50 attack/page flood", fmt.Sprintf("%.2f ×", float64(p50)/float64(max(refP50, time.Microsecond))),
			"the same flood without password checks")
		rep.check(what+" gateway RSS growth", fmt.Sprintf("%.0f MB", growthMB), "< 200 MB", growthMB < 200)
		rep.check(what+" answers other than 401/404/429/503", fmt.Sprint(bad), "= 0", bad == 0)
	}
	fmt.Fprintln(w, "    RSS: VmRSS before the attack and its highest sample (every 100 ms) during it; growth = peak − before (MB = 10^6 B)")
	fmt.Fprintln(w, "    answers: 401 wrong password, 404 unknown invitation, 429 throttled (Retry-After), 503 hash pool busy (Retry-After)")
	fmt.Fprintln(w)
	return nil
}

// addMember invites the bench member through the admin API and accepts
// the invitation through the dashboard, as a person would.
func (e *env) addMember(ctx context.Context) error {
	body, _ := json.Marshal(map[string]string{"email": signinMember})
	st, b, err := e.post(ctx, "http://"+e.admin+"/sdr/accounts/"+benchAccount+"/members", body)
	if err != nil || st != http.StatusCreated {
		return fmt.Errorf("inviting the member: %d %v %s", st, err, clip(b))
	}
	var inv struct{ Token string }
	if err := json.Unmarshal(b, &inv); err != nil || inv.Token == "" {
		return fmt.Errorf("inviting the member: no token in %s", clip(b))
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}
	resp, err := c.PostForm(e.gwURL+"/dashboard/invite", url.Values{"token": {inv.Token}, "password": {signinPassword}, "password_confirm": {signinPassword}})
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return fmt.Errorf("accepting the invitation: %d", resp.StatusCode)
	}
	return nil
}

// attackMode is what an attack sends: the password posts themselves, or
// a reference flood of the same shape that checks no password.
type attackMode int

const (
	attackPosts  attackMode = iota // bad sign-ins and invitation posts
	attackPage                     // GET /dashboard/signin: the sign-in page, no password check
	attackStatic                   // GET /bench-static: a trivial route, the cheapest request there is
)

// attackPlan is one attack: its mode, the client addresses it spreads
// over and, when rate > 0, its pace (requests a second, sent whether or
// not the earlier ones were answered, as a real client paces) instead of
// the parallel workers (each sends its next request once answered).
type attackPlan struct {
	mode  attackMode
	addrs int
	rate  float64
}

// attack runs the plan's attackers for the attack's length while /v1 is
// measured, and samples the gateway's RSS; with -profile-dir, it keeps
// the gateway's CPU profile of the attack.
func (e *env) attack(ctx context.Context, cfg *config, v1 *target, p attackPlan, name string) signinResult {
	res := signinResult{addrs: p.addrs, signin: map[int]int{}, invite: map[int]int{}}
	pid := e.gw.cmd.Process.Pid
	res.rssBefore = memKiB(pid, "VmRSS")
	cpu0 := cpuTime(pid)
	actx, cancel := context.WithTimeout(ctx, cfg.signinAttack)
	defer cancel()
	var wg, sampler sync.WaitGroup
	var mu sync.Mutex
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			mu.Lock()
			res.rssPeak = max(res.rssPeak, memKiB(pid, "VmRSS"))
			mu.Unlock()
			select {
			case <-actx.Done():
				return
			case <-t.C:
			}
		}
	}()
	if cfg.profileDir != "" {
		sampler.Add(1)
		go func() {
			defer sampler.Done()
			secs := max(int(cfg.signinAttack.Seconds())-2, 1)
			path := filepath.Join(profileDir(cfg, e.dir), "signin-"+name+"-cpu.pb.gz")
			if err := download(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", e.admin, secs), path); err != nil {
				logf("sign-in load profile: %v", err)
			}
		}()
	}
	clients := make([]*http.Client, p.addrs)
	for i := range clients {
		clients[i] = attackerClient(i)
	}
	// send makes attacker i's n-th request and counts its answer.
	send := func(i, n int) {
		var req *http.Request
		counts := res.signin
		switch {
		case p.mode == attackPage:
			req, _ = http.NewRequestWithContext(actx, http.MethodGet, e.gwURL+"/dashboard/signin", nil)
		case p.mode == attackStatic:
			req, _ = http.NewRequestWithContext(actx, http.MethodGet, e.gwURL+"/bench-static", nil)
		case i < signinAttackers:
			email := signinMember
			if i%2 == 1 {
				email = fmt.Sprintf("nobody-%d-%d@bench.example", i, n)
			}
			f := url.Values{"email": {email}, "password": {fmt.Sprintf("wrong password %d-%d", i, n)}}
			req, _ = http.NewRequestWithContext(actx, http.MethodPost, e.gwURL+"/dashboard/signin", strings.NewReader(f.Encode()))
		default:
			f := url.Values{"token": {rand.Text()}, "password": {signinPassword}, "password_confirm": {signinPassword}}
			req, _ = http.NewRequestWithContext(actx, http.MethodPost, e.gwURL+"/dashboard/invite", strings.NewReader(f.Encode()))
		}
		if i >= signinAttackers {
			counts = res.invite
		}
		if req.Method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := clients[i%p.addrs].Do(req)
		mu.Lock()
		if err != nil {
			if actx.Err() == nil {
				res.errors++
			}
		} else {
			counts[resp.StatusCode]++
		}
		mu.Unlock()
		if err == nil { // read whole, so the connection is reused rather than dialled again
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	workers := signinAttackers + inviteAttackers
	if p.rate > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// At most pacedOutstanding requests unanswered: a gateway that
			// stops answering is reported as skipped sends, not as
			// unbounded goroutines in this process.
			sem := make(chan struct{}, pacedOutstanding)
			t := time.NewTicker(time.Duration(float64(time.Second) / p.rate))
			defer t.Stop()
			for n := 0; ; n++ {
				select {
				case <-actx.Done():
					return
				case <-t.C:
				}
				select {
				case sem <- struct{}{}:
				default:
					mu.Lock()
					res.skipped++
					mu.Unlock()
					continue
				}
				wg.Add(1)
				go func(i, n int) {
					defer wg.Done()
					defer func() { <-sem }()
					send(i, n)
				}(n%workers, n/workers)
			}
		}()
	} else {
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; actx.Err() == nil; n++ {
					send(i, n)
				}
			}()
		}
	}
	res.v1 = runRound(ctx, e.client, v1, signinMeasurers, cfg.signinAttack, cfg.max)
	cancel()
	wg.Wait()
	sampler.Wait()
	res.cpu = cpuTime(pid) - cpu0
	return res
}

// pacedOutstanding bounds the unanswered requests of a paced attack.
const pacedOutstanding = 512

// attackerClient is a client whose connections come from 127.0.0.<2+i>,
// so the attack can spread over several client addresses on one machine.
func attackerClient(i int) *http.Client {
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%250))}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, LocalAddr: local}).DialContext,
		MaxIdleConnsPerHost: 4,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// badStatuses counts the answers that are none of the attack's expected
// refusals (401, 404, 429, 503).
func badStatuses(m map[int]int) int {
	n := 0
	for st, c := range m {
		switch st {
		case http.StatusUnauthorized, http.StatusNotFound, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		default:
			n += c
		}
	}
	return n
}

func statusText(m map[int]int) string {
	var sts []int
	for st := range m {
		sts = append(sts, st)
	}
	sort.Ints(sts)
	var parts []string
	for _, st := range sts {
		parts = append(parts, fmt.Sprintf("%d×%d", st, m[st]))
	}
	return strings.Join(parts, " ")
}

func slotsText(n int) string {
	if n == 0 {
		return "the default size (one slot per two cores, at least one)"
	}
	return fmt.Sprintf("%d slot(s) (hash_slots)", n)
}
