package tests

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// asyncRows reads the owner and parked state of runs ids in the store at
// url (a multi-node schema).
func asyncRows(t *testing.T, url string, ids []string) (owners map[string]string, parked int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connecting to postgres: %v", err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT id, owner, due_at IS NOT NULL FROM async_runs WHERE id = ANY($1)`, ids)
	if err != nil {
		t.Fatalf("reading async runs: %v", err)
	}
	defer rows.Close()
	owners = map[string]string{}
	for rows.Next() {
		var id, owner string
		var p bool
		if err := rows.Scan(&id, &owner, &p); err != nil {
			t.Fatal(err)
		}
		owners[id] = owner
		if p {
			parked++
		}
	}
	return owners, parked
}

// awaitParked waits until every run of ids is parked by one node, and
// returns that node.
func awaitParked(t *testing.T, url string, ids []string) string {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		owners, parked := asyncRows(t, url, ids)
		if parked == len(ids) {
			owner := owners[ids[0]]
			for id, o := range owners {
				if o != owner {
					t.Fatalf("run %s parked by %s, run %s by %s", id, o, ids[0], owner)
				}
			}
			return owner
		}
		if time.Now().After(end) {
			t.Fatalf("%d of %d runs parked while their jobs run", parked, len(ids))
		}
	}
}

// awaitOwnerGone waits until no run of ids (still in flight) belongs to
// owner any more, within d.
func awaitOwnerGone(t *testing.T, url, owner string, ids []string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		owners, _ := asyncRows(t, url, ids)
		left := 0
		for _, o := range owners {
			if o == owner {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d runs still the dead node's %s after its kill", left, d)
		}
	}
}
