package badger

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// TestLeaseIndexDue: the index's due runs are a node's parked runs due
// at now, earliest first, at most n, however often their due times moved
// (the stale heap entries left behind are never listed, and are dropped
// once they outnumber the live ones); runs unparked, removed or taken by
// another node leave their old node's list.
func TestLeaseIndexDue(t *testing.T) {
	var x leaseIndex
	base := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	rec := func(owner string, due time.Time) asyncRecord {
		return asyncRecord{Owner: owner, CreatedAt: base, LeaseUntil: store.NodeLease, DueAt: due}
	}
	const n = 3000
	want := map[string]time.Time{}
	for i := range n {
		id := fmt.Sprintf("ext_%05d", i)
		want[id] = base.Add(time.Duration(rand.N(1000)) * time.Second)
		x.set(id, rec("node-a", base.Add(time.Hour)))
	}
	// Every run delayed three times: 3n stale entries.
	for round := range 3 {
		for id, at := range want {
			if round < 2 {
				at = at.Add(time.Duration(rand.N(5000)) * time.Second)
			}
			x.set(id, rec("node-a", at))
		}
	}
	// Some unparked, some removed, some taken by node-b.
	for i := 0; i < n; i += 10 {
		id := fmt.Sprintf("ext_%05d", i)
		switch i % 30 {
		case 0:
			x.set(id, asyncRecord{Owner: "node-a", CreatedAt: base, LeaseUntil: base.Add(time.Minute)})
		case 10:
			x.remove(id)
		case 20:
			x.set(id, rec("node-b", want[id]))
		}
		delete(want, id)
	}
	if h := x.parked["node-a"]; len(h.e) > 2*h.live+1024 || h.live != len(want) {
		t.Errorf("node-a's heap: %d entries, %d live, want %d live and no more than 2x+1024", len(h.e), h.live, len(want))
	}
	now := base.Add(500 * time.Second)
	var exp []string
	for id, at := range want {
		if !at.After(now) {
			exp = append(exp, id)
		}
	}
	slices.SortFunc(exp, func(a, b string) int { return want[a].Compare(want[b]) })
	got := x.due("node-a", now, n)
	if len(got) != len(exp) {
		t.Fatalf("%d due, want %d", len(got), len(exp))
	}
	for i, id := range got {
		if !want[id].Equal(want[exp[i]]) {
			t.Fatalf("due[%d] = %s at %v, want %v", i, id, want[id], want[exp[i]])
		}
	}
	if first := x.due("node-a", now, 10); !slices.Equal(first, got[:10]) {
		t.Errorf("the first 10 due = %v, want %v (listing puts them back)", first, got[:10])
	}
	if d := x.due("node-a", base.Add(-time.Second), n); len(d) != 0 {
		t.Errorf("%d due before the earliest due time", len(d))
	}
	if d := x.due("node-b", base.Add(time.Hour), n); len(d) != n/30 {
		t.Errorf("node-b: %d due, want %d", len(d), n/30)
	}
}

// TestLeaseIndexClaimable: a claim finds the runs not parked whose lease
// lapsed and the parked runs of a node whose heartbeat lapsed, oldest
// first; a live node's parked runs are not candidates.
func TestLeaseIndexClaimable(t *testing.T) {
	s := &Store{}
	now := time.Now()
	s.async.owners.Store("w1", struct{}{})
	x := &s.async.leases
	x.beat("live", now.Add(time.Minute))
	x.beat("dead", now.Add(-time.Second))
	at := func(i int) time.Time { return now.Add(time.Duration(i-100) * time.Second) }
	x.set("queued", asyncRecord{CreatedAt: at(5)})
	x.set("leased", asyncRecord{Owner: "w1", CreatedAt: at(1), LeaseUntil: now.Add(time.Minute)})
	x.set("lapsed", asyncRecord{Owner: "w1", CreatedAt: at(4), LeaseUntil: now.Add(-time.Second)})
	x.set("gone-worker", asyncRecord{Owner: "w0", CreatedAt: at(6), LeaseUntil: now.Add(time.Minute)})
	x.set("parked-live", asyncRecord{Owner: "live", CreatedAt: at(0), LeaseUntil: store.NodeLease, DueAt: now})
	x.set("parked-dead", asyncRecord{Owner: "dead", CreatedAt: at(2), LeaseUntil: store.NodeLease, DueAt: now})
	x.set("parked-never", asyncRecord{Owner: "never-beat", CreatedAt: at(3), LeaseUntil: store.NodeLease, DueAt: now})
	want := []string{"parked-dead", "parked-never", "lapsed", "queued", "gone-worker"}
	if got := x.claimable(s, now, 10); !slices.Equal(got, want) {
		t.Errorf("claimable = %v, want %v", got, want)
	}
	if got := x.claimable(s, now, 2); !slices.Equal(got, want[:2]) {
		t.Errorf("claimable, 2 = %v, want %v", got, want[:2])
	}
}
