package badger

import (
	"fmt"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// BenchmarkLeaseIndexIdle is what the lease index costs a node at each
// sweep and claim with n runs parked and none due (issue 38): one op is
// one sweep's due and one claim's claimable; the poller sweeps every
// second and the worker claims every two.
func BenchmarkLeaseIndexIdle(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := &Store{}
			x := &s.async.leases
			now := time.Now()
			x.beat("node-a", now.Add(time.Minute))
			for i := range n {
				x.set(fmt.Sprintf("ext_%07d", i), asyncRecord{Owner: "node-a", CreatedAt: now, LeaseUntil: store.NodeLease,
					DueAt: now.Add(time.Hour + time.Duration(i)*time.Millisecond)})
			}
			b.ResetTimer()
			for range b.N {
				if len(x.due("node-a", now, 256)) != 0 || len(x.claimable(s, now, 1000)) != 0 {
					b.Fatal("due or claimable runs")
				}
			}
		})
	}
}
