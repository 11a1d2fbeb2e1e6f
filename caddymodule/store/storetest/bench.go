package storetest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// BenchSettle measures settles per second with 32 concurrent callers, each
// on its own account or all on one hot account, against stores from open
// (called once per mode; BenchSettle closes them). Every implementation
// runs the same load, so their figures compare.
func BenchSettle(b *testing.B, open func(b *testing.B) store.Store) {
	data := make([]json.RawMessage, 10)
	for i := range data {
		data[i] = json.RawMessage(fmt.Sprintf(`{"name":"Company %d","followers":12345,"url":"https://example.com/c/%d"}`, i, i))
	}
	for _, mode := range []struct {
		name     string
		accounts int
	}{{"separate_accounts", 32}, {"hot_account", 1}} {
		b.Run(mode.name, func(b *testing.B) {
			s := open(b)
			defer s.Close()
			ctx := b.Context()
			for a := range mode.accounts {
				if _, err := s.CreateAccount(ctx, "acct_"+strconv.Itoa(a), credits.Micros(1)<<60, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
			var seq atomic.Int64
			const callers = 32
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					account := "acct_" + strconv.Itoa(c%mode.accounts)
					for {
						i := seq.Add(1)
						if i > int64(b.N) {
							return
						}
						run := &runs.Run{ID: "ext_" + strconv.FormatInt(i, 10), Status: "completed", AccountID: account, KeyID: "key_" + account,
							Data: append([]json.RawMessage(nil), data...), Pagination: runs.Pagination{Total: len(data)}}
						if _, err := s.Settle(ctx, store.Settlement{Run: run, Price: 1725, Offer: "source_b/pro_net", Platform: "pro_net", Now: time.Now()}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "settles/s")
		})
	}
}
