package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

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
				total += cpuTime(pid)
			}
		}
		return total
	}
}
