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
// (store.Store.Reserve). A served call's settle then captures the hold in
// its own transaction (billing.Call.Settled: no Release follows); a failed
// call drops it with Release. Both paths are measured in process, as the
// settle phase measures settles: 16 callers (the end-to-end phase's
// connections) on the hot account and its key, as every end-to-end call
// on the bench account.
//
//   - served: Reserve alone in the measured window. Each caller reserves
//     reservePerWindow one-record holds, then every hold of the window is
//     released outside it (the CPU of this process and of the database is
//     read around each window only). The capture by the settle is not in
//     the figure: the settle's capture statement runs whether or not the
//     run has a hold (its cost is the settle's), and what a present hold
//     adds, one row deleted by a statement already sent, with no round
//     trip nor commit of its own, is too small to isolate from a settle's
//     noise.
//   - failed: Reserve then Release of the live hold, back to back, as
//     before round 7: a failed call's path, a second commit.
type reserveFigures struct {
	store    string
	path     string // reservePathServed or reservePathFailed
	callers  int
	calls    int64
	userUS   float64 // this process, per call of the path
	sysUS    float64
	serverUS float64 // PostgreSQL's backends, per call of the path
	serverOK bool
}

const (
	reservePathServed = "served"
	reservePathFailed = "failed"
)

// reservePerWindow is how many holds each caller takes in one measured
// window of the served path, before they are released: the account then
// holds from 0 to 2 × callers live holds, 16 on average at 16 callers,
// about the calls an end-to-end round holds at once (each of its 16
// connections keeps a hold from its reserve to its settle, most of the
// call). A reserve sums the account's and the key's live holds, so more
// would cost it more than a call pays.
const reservePerWindow = 2

// cpuUS is the CPU of one call of the path: the process's, and the
// database's where measured.
func (f reserveFigures) cpuUS() float64 { return f.userUS + f.sysUS + f.serverUS }

// reserveMeter adds up the CPU of the measured windows of one path.
type reserveMeter struct {
	server           func(context.Context) time.Duration
	user, sys, srv   time.Duration
	calls            int64
	srvOK, usageOK   bool
	srv0, u0, s0     time.Duration
	measuredWallTime time.Duration
	t0               time.Time
}

// start reads the CPU counters before a window: the database's first, so
// that reading it (a query of this process) falls outside this process's
// window.
func (m *reserveMeter) start(ctx context.Context) {
	if m.server != nil {
		m.srv0 = m.server(ctx)
	}
	var ok bool
	m.u0, m.s0, _, ok = selfUsage()
	m.usageOK = ok
	m.t0 = time.Now()
}

// stop adds the window that start opened, of calls calls.
func (m *reserveMeter) stop(ctx context.Context, calls int64) {
	m.measuredWallTime += time.Since(m.t0)
	u1, s1, _, ok := selfUsage()
	if ok && m.usageOK {
		m.user += u1 - m.u0
		m.sys += s1 - m.s0
	}
	if m.server != nil {
		if d := m.server(ctx) - m.srv0; d > 0 {
			m.srv += d
			m.srvOK = true
		}
	}
	m.calls += calls
}

// figures is the CPU per call over every window.
func (m *reserveMeter) figures(name, path string, callers int) reserveFigures {
	f := reserveFigures{store: name, path: path, callers: callers, calls: m.calls}
	if m.calls == 0 {
		return f
	}
	k := float64(m.calls)
	f.userUS, f.sysUS = float64(m.user.Microseconds())/k, float64(m.sys.Microseconds())/k
	if m.srvOK {
		f.serverUS, f.serverOK = float64(m.srv.Microseconds())/k, true
	}
	return f
}

// benchReserve measures both paths on the hot account in rounds of dur
// each (at most max calls), interleaved served, failed, served, failed, …;
// each path's CPU per call is over all its rounds.
func (st *settleSetup) benchReserve(ctx context.Context, name string, server func(context.Context) time.Duration,
	callers, rounds int, dur time.Duration, max int64) (served, failed reserveFigures, err error) {
	acct := settleAccount(settleAccounts)
	var seq atomic.Int64 // hold ids are unique over the whole phase
	hold := func() store.Hold {
		return store.Hold{ID: fmt.Sprintf("ext_hold_%d", seq.Add(1)), AccountID: acct, KeyID: "key_" + acct,
			Price: settlePrice, Records: 1, Now: time.Now().UTC()}
	}
	reserve := func(h store.Hold) error {
		res, err := st.s.Reserve(ctx, h)
		if err != nil {
			return fmt.Errorf("%s reservation step: %v", name, err)
		}
		if res.Records != 1 {
			return fmt.Errorf("%s reservation step: reserved %d records of 1", name, res.Records)
		}
		return nil
	}
	// Warm up: connections, caches, prepared statements.
	for range 20 {
		h := hold()
		if err := reserve(h); err != nil {
			return served, failed, err
		}
		if err := st.s.Release(ctx, h.ID); err != nil {
			return served, failed, err
		}
	}
	sm, fm := &reserveMeter{server: server}, &reserveMeter{server: server}
	for r := 0; r < rounds && ctx.Err() == nil; r++ {
		if err := st.reserveServedRound(ctx, sm, hold, reserve, callers, dur, max); err != nil {
			return served, failed, err
		}
		if err := st.reserveFailedRound(ctx, fm, hold, reserve, callers, dur, max); err != nil {
			return served, failed, err
		}
		logf("reservation step %s round %d: served path %d calls, failed path %d calls so far", name, r+1, sm.calls, fm.calls)
	}
	return sm.figures(name, reservePathServed, callers), fm.figures(name, reservePathFailed, callers), ctx.Err()
}

// reserveServedRound runs windows of Reserve alone until dur of measured
// time or max calls: in each, every caller takes reservePerWindow holds;
// after it, unmeasured, the window's holds are released.
func (st *settleSetup) reserveServedRound(ctx context.Context, m *reserveMeter, hold func() store.Hold,
	reserve func(store.Hold) error, callers int, dur time.Duration, max int64) error {
	end := m.measuredWallTime + dur
	for n := int64(0); m.measuredWallTime < end && n < max && ctx.Err() == nil; {
		ids := make([][]string, callers)
		m.start(ctx)
		err := fanOut(callers, func(c int) error {
			for range reservePerWindow {
				h := hold()
				if err := reserve(h); err != nil {
					return err
				}
				ids[c] = append(ids[c], h.ID)
			}
			return nil
		})
		m.stop(ctx, int64(callers*reservePerWindow))
		n += int64(callers * reservePerWindow)
		if err != nil {
			return err
		}
		if err := fanOut(callers, func(c int) error {
			for _, id := range ids[c] {
				if err := st.s.Release(ctx, id); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// reserveFailedRound runs callers doing Reserve then Release of the live
// hold, back to back, for dur (at most max steps), all measured.
func (st *settleSetup) reserveFailedRound(ctx context.Context, m *reserveMeter, hold func() store.Hold,
	reserve func(store.Hold) error, callers int, dur time.Duration, max int64) error {
	var issued, done atomic.Int64
	deadline := time.Now().Add(dur)
	m.start(ctx)
	err := fanOut(callers, func(int) error {
		for time.Now().Before(deadline) && issued.Add(1) <= max && ctx.Err() == nil {
			h := hold()
			if err := reserve(h); err != nil {
				return err
			}
			if err := st.s.Release(ctx, h.ID); err != nil {
				return err
			}
			done.Add(1)
		}
		return nil
	})
	m.stop(ctx, done.Load())
	return err
}

// fanOut runs fn(0) … fn(n-1) on n goroutines and returns the first error.
func fanOut(n int, fn func(i int) error) error {
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(i); err != nil {
				errOnce.Do(func() { firstErr = err })
			}
		}()
	}
	wg.Wait()
	return firstErr
}
