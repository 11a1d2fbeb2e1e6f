package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"socialrouter/caddymodule/store/postgres"
)

// pgScratch is what one phase uses of the database at SDR_TEST_POSTGRES_URL:
// a fresh schema, dropped by close, and a side pool of the bench's own (it
// reads the backends' CPU and drops the schema). The phase's store
// connects with storeURL, whose application_name names its backends.
type pgScratch struct {
	url, schema, app string
	side             *pgxpool.Pool
	maxConns         int32 // the pool size a store opened on url gets
	autovacuumOff    bool  // the server's autovacuum is off: see vacuumNote
	// deadBefore and deadAfter are the dead rows of the system catalogs
	// around the VACUUM newPGScratch runs; vacuumErr why it failed.
	deadBefore, deadAfter int64
	vacuumErr             error
}

// vacuumNote says what the VACUUM before the phase did, and, when the
// server's autovacuum is off, why it runs: every test run's schemas leave
// dead catalog rows behind (150 078 in pg_attribute beside 330 live after
// a day of tests here; 63 746 after ten minutes of seven sessions' tests),
// which a backend reads through whenever it loads a relation's
// description (a new connection, a cache reset by others' DDL). Unvacuumed
// they halved the settles per second of round 12 (docs/perf-log.md).
func (p *pgScratch) vacuumNote() string {
	if p.vacuumErr != nil {
		return fmt.Sprintf("; VACUUM of the system catalogs failed (%v): figures may drift with their bloat", p.vacuumErr)
	}
	note := fmt.Sprintf("; the system catalogs VACUUMed before the phase (dead rows %d → %d)", p.deadBefore, p.deadAfter)
	if p.autovacuumOff {
		note += ", as autovacuum is OFF on this server"
	}
	return note
}

// vacuumCatalogs vacuums every table of pg_catalog (what the bench's own
// connections read through; other schemas are not its business) and
// records their dead rows before and after. Plain VACUUM blocks neither
// reads nor writes; a table the role may not vacuum is skipped with a
// warning by the server, not an error.
func (p *pgScratch) vacuumCatalogs(ctx context.Context) {
	dead := func() int64 {
		var n int64
		_ = p.side.QueryRow(ctx, `SELECT coalesce(sum(n_dead_tup), 0)::bigint FROM pg_stat_sys_tables WHERE schemaname = 'pg_catalog'`).Scan(&n)
		return n
	}
	p.deadBefore = dead()
	var tables []string
	rows, err := p.side.Query(ctx, `SELECT format('%I.%I', schemaname, relname) FROM pg_stat_sys_tables WHERE schemaname = 'pg_catalog' ORDER BY 1`)
	if err == nil {
		tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err == nil && len(tables) > 0 {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		_, err = p.side.Exec(ctx, "VACUUM "+strings.Join(tables, ", "))
	}
	p.vacuumErr = err
	p.deadAfter = dead()
}

// newPGScratch creates a schema and an application_name for the phase
// named what.
func newPGScratch(ctx context.Context, url, what string) (*pgScratch, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parsing SDR_TEST_POSTGRES_URL: %v", err)
	}
	// A pool from the parsed config, since the URL may carry pool settings
	// a plain connection refuses.
	side, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	p := &pgScratch{
		url:      url,
		schema:   fmt.Sprintf("sdr_bench_%s_%d_%d", what, os.Getpid(), time.Now().UnixNano()),
		app:      fmt.Sprintf("sdr_bench_%s_%d", what, os.Getpid()),
		side:     side,
		maxConns: pc.MaxConns,
	}
	if _, err := side.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{p.schema}.Sanitize()); err != nil {
		side.Close()
		return nil, fmt.Errorf("creating schema %s: %v", p.schema, err)
	}
	var av string
	if err := side.QueryRow(ctx, "SHOW autovacuum").Scan(&av); err == nil {
		p.autovacuumOff = av == "off"
	}
	p.vacuumCatalogs(ctx)
	if p.vacuumErr == nil {
		logf("PostgreSQL %s: system catalogs vacuumed, dead rows %d → %d", what, p.deadBefore, p.deadAfter)
	}
	return p, nil
}

// openPGScratch is newPGScratch with a store opened in the schema: what a
// phase measuring the store itself (settle, retention, webhooks) needs.
// Close the store, then the scratch.
func openPGScratch(ctx context.Context, url, what string) (*pgScratch, *postgres.Store, error) {
	db, err := newPGScratch(ctx, url, what)
	if err != nil {
		return nil, nil, err
	}
	s, err := postgres.Open(ctx, db.storeURL())
	if err != nil {
		db.close()
		return nil, nil, err
	}
	return db, s, nil
}

// storeURL is url with the scratch schema as search_path and the
// phase's application_name: what a store of the phase connects with.
func (p *pgScratch) storeURL() string {
	return withParam(withParam(p.url, "search_path", p.schema), "application_name", p.app)
}

// close drops the schema, even after the phase's context ended, and
// closes the side pool.
func (p *pgScratch) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.side.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{p.schema}.Sanitize()+" CASCADE"); err != nil {
		logf("dropping schema %s: %v", p.schema, err)
	}
	p.side.Close()
}

// serverCPU returns a function giving the CPU time used so far by the
// PostgreSQL backends serving the phase's store (pgServerCPU).
func (p *pgScratch) serverCPU() func(ctx context.Context) time.Duration {
	return pgServerCPU(p.side, p.app)
}

// pgServerCPU returns a function giving the CPU time used so far by the
// PostgreSQL backends serving the connections named app (their
// application_name), read from /proc: the server runs on this machine in
// the bench's setting, so a settle's cost in the database can be printed
// beside the client's. The pool keeps its connections for the whole
// phase, so the difference of two readings is what the backends spent in
// between; the WAL writer and the checkpointer are not counted. It gives 0
// when the server's processes are not visible (another host, another
// container).
func pgServerCPU(pool *pgxpool.Pool, app string) func(ctx context.Context) time.Duration {
	return func(ctx context.Context) time.Duration {
		rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
		if err != nil {
			return 0
		}
		defer rows.Close()
		var total time.Duration
		for rows.Next() {
			var pid int
			if rows.Scan(&pid) == nil {
				total += backendCPU(pid)
			}
		}
		return total
	}
}

// backendCPU is the CPU time a PostgreSQL backend (one process, one
// thread) has used so far: its scheduler's run time from
// /proc/<pid>/schedstat, in nanoseconds, where /proc/<pid>/stat counts in
// 10 ms ticks (too coarse for the reservation step's windows of a few
// milliseconds); cpuTime where schedstat is missing.
func backendCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return cpuTime(pid)
	}
	f := strings.Fields(string(bytes.TrimSpace(b)))
	if len(f) == 0 {
		return cpuTime(pid)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return cpuTime(pid)
	}
	return time.Duration(ns)
}

// withParam adds a query parameter to a PostgreSQL URL.
func withParam(url, key, value string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + key + "=" + value
}
