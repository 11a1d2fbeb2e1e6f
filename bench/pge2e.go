package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The pg-e2e phase: the N = 1 extraction of the end-to-end phase through a
// second gateway process whose store is PostgreSQL (SDR_TEST_POSTGRES_URL,
// a fresh schema dropped afterwards), in rounds interleaved with the
// badger-backed gateway of the end-to-end phase, the same simulator and
// load generator. A call on PostgreSQL costs CPU in two places, the
// gateway process and the backends serving its pool (found by the pool's
// application_name, as the settle phase finds its own): both are counted.
// This is the denominator of the PostgreSQL reservation step's share
// (section 2): the badger-backed call spends no database CPU.

// pgE2EFigures is the pg-e2e phase's outcome: the medians of each
// gateway's rounds. cpuPerReq holds "gateway" (the process), "backends"
// (PostgreSQL's, for pg only), "total" (their sum, per round), "sim" and
// "loadgen".
type pgE2EFigures struct {
	pg, badger summary
	conns      int32 // the gateway's pool size
}

// cpuUS is the CPU per call of the PostgreSQL-backed gateway: its process
// and its backends (the median of the rounds' sums).
func (p *pgE2EFigures) cpuUS() float64 { return p.pg.cpuPerReq["total"] }

// pgEndToEnd runs the phase next to the running env e (whose gateway is
// the badger-backed reference), or prints that it is skipped.
func (rep *report) pgEndToEnd(ctx context.Context, e *env, cfg *config) error {
	w := rep.section("1p")
	url := os.Getenv("SDR_TEST_POSTGRES_URL")
	if url == "" {
		fmt.Fprintln(w, "1p. End-to-end on PostgreSQL: skipped, SDR_TEST_POSTGRES_URL is not set (the PostgreSQL reservation share needs it)")
		fmt.Fprintln(w)
		return nil
	}
	logf("pg-e2e: a gateway on PostgreSQL")
	db, err := newPGScratch(ctx, url, "gw")
	if err != nil {
		return err
	}
	defer db.close()
	pe, err := startPGGateway(ctx, e, cfg, db)
	if err != nil {
		return err
	}
	defer pe.gw.stop() // before db.close drops the schema under it
	if err := e.setItems(ctx, 1); err != nil {
		return err
	}
	for _, x := range []*env{pe, e} {
		if err := x.checkPayloads(ctx, 1); err != nil {
			return err
		}
	}
	a, b := pe.extractTarget(1), e.extractTarget(1)
	a.name, b.name = "postgres", "badger"
	pgClocks := pidClocks(pe.pids())
	server := db.serverCPU()
	pgClocks["backends"] = func() time.Duration { return server(ctx) }
	badgerClocks := pidClocks(e.pids())
	runRound(ctx, e.client, a, cfg.conc, cfg.warm, cfg.max)
	runRound(ctx, e.client, b, cfg.conc, cfg.warm, cfg.max)
	var ra, rb []round
	for i := 0; i < cfg.e2eRounds; i++ {
		x := measureCPU(ctx, e.client, a, cfg.conc, cfg.round, cfg.max, pgClocks)
		x.cpu["total"] = x.cpu["gateway"] + x.cpu["backends"]
		y := measureCPU(ctx, e.client, b, cfg.conc, cfg.round, cfg.max, badgerClocks)
		y.cpu["total"] = y.cpu["gateway"]
		if err := ctx.Err(); err != nil {
			return err
		}
		logf("pg-e2e N=1 round %d: postgres %.0f req/s (%d failed), badger %.0f req/s (%d failed)", i+1, x.rps(), x.failed, y.rps(), y.failed)
		ra, rb = append(ra, x), append(rb, y)
	}
	f := &pgE2EFigures{pg: summarize(a.name, ra), badger: summarize(b.name, rb), conns: db.maxConns}
	rep.pgE2E = f

	fmt.Fprintln(w, "1p. End-to-end on PostgreSQL: POST /v1/extract/pro_net/profile.info (N=1) through a second gateway process whose store is")
	fmt.Fprintf(w, "    PostgreSQL (SDR_TEST_POSTGRES_URL, fresh schema dropped afterwards, pool of %d connections; rate limiter in memory as in\n", f.conns)
	fmt.Fprintln(w, "    section 1) vs the badger-backed gateway of section 1, same simulator and load generator, rounds interleaved;")
	fmt.Fprintln(w, "    CPU per call of the gateway process plus, on PostgreSQL, of the backends serving its pool (not the WAL writer)")
	fmt.Fprintf(w, "    %-16s %9s %9s %9s  %s\n", "", "req/s", "p50 ms", "p99 ms", "CPU µs/req: gateway process, backends, gateway + backends, simulator, load generator")
	for _, s := range []summary{f.pg, f.badger} {
		backends := "     -" // badger: no database process
		if v, ok := s.cpuPerReq["backends"]; ok {
			backends = fmt.Sprintf("%6.0f", v)
		}
		fmt.Fprintf(w, "    N=1  %-11s %9.0f %9.2f %9.2f  %6.0f %s %6.0f %6.0f %6.0f   rounds %s%s\n",
			s.name, s.rps, s.p50, s.p99, s.cpuPerReq["gateway"], backends, s.cpuPerReq["total"],
			s.cpuPerReq["sim"], s.cpuPerReq["loadgen"], fmtRounds(s.rounds), failures(s))
	}
	fmt.Fprintf(w, "    N=1  postgres/badger CPU µs per call %.0f / %.0f = %.2f ×;  req/s %.2f ×\n\n",
		f.pg.cpuPerReq["total"], f.badger.cpuPerReq["total"], f.pg.cpuPerReq["total"]/f.badger.cpuPerReq["total"], f.pg.rps/f.badger.rps)
	rep.info("e2e N=1 gateway on PostgreSQL, CPU µs per call", fmt.Sprintf("%.0f µs", f.cpuUS()),
		fmt.Sprintf("gateway + backends; on badger %.0f µs, interleaved", f.badger.cpuPerReq["total"]))
	return nil
}

// startPGGateway starts a gateway on the store in db's schema, beside e's
// (same simulator, same client), with an account and key of its own.
func startPGGateway(ctx context.Context, e *env, cfg *config, db *pgScratch) (*env, error) {
	pe := &env{dir: filepath.Join(e.dir, "pg"), client: e.client, simA: e.simA, simB: e.simB, sim: e.sim}
	if err := os.MkdirAll(pe.dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	d := caddyfileData{
		Admin: ports[0], GW: ports[1], Ref: ports[2], Static: ports[3],
		Services: cfg.services, Postgres: db.storeURL(),
		SimA: e.simA, SimB: e.simB, SimBHost: strings.TrimPrefix(e.simB, "http://"),
		Catalogue: "pending", Run: "pending",
	}
	pe.addresses(d)
	if err := pe.startGateway(ctx, cfg, d, "caddy-pg.log"); err != nil {
		return nil, err
	}
	if err := pe.createAccount(ctx); err != nil {
		pe.gw.stop()
		return nil, err
	}
	return pe, nil
}
