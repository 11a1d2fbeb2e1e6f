package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"socialrouter/caddymodule/store"
)

// The reservation step of a call (issue 16): before the upstream is called
// the gateway holds the money of the records it may return
// (store.Store.Reserve), and when the call ends it drops what the settle
// did not capture (Release). reserveFigures is its CPU per call, measured
// in process as the settle phase measures settles: callers reserve and
// release on the hot account and its key, as every end-to-end call does on
// the bench account.
type reserveFigures struct {
	store    string
	callers  int
	calls    int64
	userUS   float64 // this process, per Reserve + Release
	sysUS    float64
	serverUS float64 // PostgreSQL's backends, per Reserve + Release
	serverOK bool
}

// cpuUS is the CPU of one reservation step: the process's, and the
// database's where measured.
func (f reserveFigures) cpuUS() float64 { return f.userUS + f.sysUS + f.serverUS }

// benchReserve runs callers goroutines doing Reserve then Release of a
// fresh hold on the hot account for dur (at most max steps in all).
func (st *settleSetup) benchReserve(ctx context.Context, name string, server func(context.Context) time.Duration,
	callers int, dur time.Duration, max int64) (reserveFigures, error) {
	f := reserveFigures{store: name, callers: callers}
	acct := settleAccount(settleAccounts)
	var (
		issued, done atomic.Int64
		wg           sync.WaitGroup
		errOnce      sync.Once
		firstErr     error
	)
	step := func(c, j int) error {
		h := store.Hold{ID: fmt.Sprintf("ext_hold_%d_%d", c, j), AccountID: acct, KeyID: "key_" + acct,
			Price: settlePrice, Records: 1, Now: time.Now().UTC()}
		res, err := st.s.Reserve(ctx, h)
		if err != nil {
			return err
		}
		if res.Records != 1 {
			return fmt.Errorf("reserved %d records of 1", res.Records)
		}
		return st.s.Release(ctx, h.ID)
	}
	// Warm up: connections, caches, prepared statements.
	for j := range 20 {
		if err := step(-1, j); err != nil {
			return f, err
		}
	}
	u0, s0, _, ok0 := selfUsage()
	var srv0 time.Duration
	if server != nil {
		srv0 = server(ctx)
	}
	deadline := time.Now().Add(dur)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; time.Now().Before(deadline) && issued.Add(1) <= max && ctx.Err() == nil; j++ {
				if err := step(c, j); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return f, fmt.Errorf("%s reservation step: %v", name, firstErr)
	}
	f.calls = done.Load()
	u1, s1, _, ok1 := selfUsage()
	if f.calls == 0 || !ok0 || !ok1 {
		return f, ctx.Err()
	}
	k := float64(f.calls)
	f.userUS, f.sysUS = float64((u1-u0).Microseconds())/k, float64((s1-s0).Microseconds())/k
	if server != nil {
		if d := server(ctx) - srv0; d > 0 {
			f.serverUS, f.serverOK = float64(d.Microseconds())/k, true
		}
	}
	return f, ctx.Err()
}
