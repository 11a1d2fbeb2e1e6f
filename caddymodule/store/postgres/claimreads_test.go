package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
)

// TestClaimReadsWhatItTakes: a node died holding 2,000 parked runs, and
// five runs wait besides, queued or their lease lapsed; another node
// takes the dead node's runs over in batches of 100. After five batches,
// the sixth reads a few rows per run it takes: not again the runs the
// batches before took (the claim by the creation index with its
// conditions ORed read 600 rows there), nor every run the dead node still
// holds (a bitmap read and a sort, the planner's choice without
// statistics: 1,500), nor the table (a join to a sequential scan: 4,000
// with the two). With no node dead, a claim takes the five and reads
// little more; and a claim of runs queued by the thousand reads those it
// takes. The rows are
// those of the statement's plan, EXPLAIN ANALYZE in a transaction rolled
// back; with statistics and without (a new schema, or autovacuum off), and
// a node dead by its lock no session holds or by its lapsed heartbeat.
func TestClaimReadsWhatItTakes(t *testing.T) {
	const runs, waiting, batch = 2000, 5, 100
	for _, c := range []struct {
		name    string
		dead    string // node1 dead by its "lock" or its "beat", alive, or its runs "queued"
		analyze bool
	}{
		{"lock gone, no statistics", "lock", false},
		{"lock gone, analyzed", "lock", true},
		{"heartbeat lapsed, no statistics", "beat", false},
		{"heartbeat lapsed, analyzed", "beat", true},
		{"none dead, no statistics", "", false},
		{"none dead, analyzed", "", true},
		{"runs queued, no statistics", "queued", false},
		{"runs queued, analyzed", "queued", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, conn := claimSchema(t, runs, c.dead)
			now := time.Now()
			if c.analyze {
				if _, err := conn.Exec(t.Context(), "ANALYZE async_runs"); err != nil {
					t.Fatal(err)
				}
			}
			want := waiting
			lapsed, unlocked := []string{}, []string{}
			if c.dead != "" {
				for i := range 5 {
					got, err := s.ClaimAsyncRuns(t.Context(), "node2", batch, now, now.Add(time.Minute))
					if err != nil || len(got) != batch {
						t.Fatalf("batch %d: claimed %d runs, %v", i, len(got), err)
					}
				}
				want = batch
				switch c.dead {
				case "beat":
					lapsed = []string{"node1"}
				case "lock":
					unlocked = []string{"node1"}
				}
			}
			tx, err := conn.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(t.Context())
			var plan []struct{ Plan planNode }
			if err := tx.QueryRow(t.Context(), "EXPLAIN (ANALYZE, FORMAT JSON) "+postgres.ClaimSQL,
				"node2", batch, now, now.Add(time.Minute), lapsed, store.NodeLease, unlocked).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			taken, read := plan[0].Plan.ActualRows, plan[0].Plan.rowsRead("async_runs")
			if taken != float64(want) {
				t.Errorf("the claim took %v runs, want %d", taken, want)
			}
			if read > float64(5*want) {
				t.Errorf("the claim of %d read %v rows of async_runs (want ≤ %d); plan:\n%s", want, read, 5*want, plan[0].Plan)
			}
		})
	}
}

// claimSchema opens a store on a fresh schema holding runs parked by
// node1, oldest first, each with a document of 1 KB (as the bench's: the
// planner weighs a table by its pages), then three runs queued and two
// whose lease lapsed (node3's, alive): node1 dead by its lock ("lock":
// its beat lasts an hour more, its lock is a key no session holds), by
// its beat ("beat": lapsed a minute ago), or alive (""); or the runs
// queued instead ("queued": no owner, no lease). It returns the store
// and a connection on the schema.
func claimSchema(t *testing.T, runs int, dead string) (*postgres.Store, *pgx.Conn) {
	t.Helper()
	url := testURL(t)
	schema := testSchema(t, url)
	s, err := postgres.Open(t.Context(), url, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	now := time.Now()
	live, key := now.Add(time.Hour), "hashtextextended('sdr claim test ' || current_schema(), 0)"
	owner, lease, due := "node1", any(store.NodeLease), any(now.Add(time.Hour))
	switch dead {
	case "beat":
		live = now.Add(-time.Minute)
	case "":
		key = "NULL"
	case "queued":
		key, owner, lease, due = "NULL", "", nil, nil
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"SET search_path = " + pgx.Identifier{schema}.Sanitize(), nil},
		{`INSERT INTO async_runs (id, account_id, request, doc, hold_price, hold_records, created_at, deadline, owner, lease_until, due_at)
SELECT 'ext_' || lpad(g::text, 5, '0'), 'acme', '\x7b7d', convert_to(repeat('x', 1000), 'UTF8'), 0, 0, $1::timestamptz - make_interval(secs => $2 - g),
	$1::timestamptz + interval '1 hour', $3, $4::timestamptz, $5::timestamptz
FROM generate_series(1, $2) g`, []any{now, runs, owner, lease, due}},
		{`INSERT INTO async_runs (id, account_id, request, doc, hold_price, hold_records, created_at, deadline, owner, lease_until)
SELECT 'ext_w' || g, 'acme', '\x7b7d', '\x7b7d', 0, 0, $1::timestamptz, $1::timestamptz + interval '1 hour',
	CASE WHEN g <= 3 THEN '' ELSE 'node3' END, CASE WHEN g <= 3 THEN NULL ELSE $1::timestamptz - interval '1 second' END
FROM generate_series(1, 5) g`, []any{now}},
		{`INSERT INTO async_nodes (node, heartbeat_at, live_until, lock_key) VALUES ('node1', $1, $2, ` + key + `),
	('node3', $1, $3, NULL)`, []any{now.Add(-time.Minute), live, now.Add(time.Hour)}},
	} {
		if _, err := conn.Exec(t.Context(), q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	return s, conn
}

// planNode is a node of a plan as EXPLAIN (ANALYZE, FORMAT JSON) prints
// it. Rows are per loop.
type planNode struct {
	Type       string     `json:"Node Type"`
	Index      string     `json:"Index Name"`
	Relation   string     `json:"Relation Name"`
	ActualRows float64    `json:"Actual Rows"`
	Loops      float64    `json:"Actual Loops"`
	Filtered   float64    `json:"Rows Removed by Filter"`
	Rechecked  float64    `json:"Rows Removed by Index Recheck"`
	Plans      []planNode `json:"Plans"`
}

// rowsRead sums the rows the scans of relation under n returned or
// removed, over all their loops.
func (n planNode) rowsRead(relation string) float64 {
	var sum float64
	if n.Relation == relation {
		sum = (n.ActualRows + n.Filtered + n.Rechecked) * n.Loops
	}
	for _, c := range n.Plans {
		sum += c.rowsRead(relation)
	}
	return sum
}

// String is n's tree, a node a line: type, relation and index, rows per
// loop, loops, rows removed.
func (n planNode) String() string {
	var b strings.Builder
	var walk func(n planNode, depth int)
	walk = func(n planNode, depth int) {
		fmt.Fprintf(&b, "%s%s %s %s rows=%v loops=%v removed=%v\n", strings.Repeat("  ", depth),
			n.Type, n.Relation, n.Index, n.ActualRows, n.Loops, n.Filtered+n.Rechecked)
		for _, c := range n.Plans {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}
