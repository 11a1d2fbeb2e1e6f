package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/retention"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
)

// Retention phase (section 8): how many bytes one stored run takes, and
// whether a store under steady settles with run_retention on stays flat.
// A soak settles runs of the settle phase's shape (ten records, ~26 KB)
// from retentionCallers callers for -soak, while a retention runner with
// a window of -retention-window expires them every tenth of it; the
// store's size is sampled every tenth of the soak. Flat means the mean
// of the second half is within 25 % of the first half's: the first half
// holds the window filling and the first passes; a store growing at a
// steady rate from empty has a second half about three times the first.
// Means, not peaks: badger's size is a saw (it grows by value-log files
// and drops when a pass collects them).
const (
	retentionCallers = 8
	retentionRuns    = 400 // runs settled to measure bytes per run
	// retentionVlogFile is the badger value-log file size of the phase:
	// GC gives space back a file at a time, and the default 1 GiB file
	// would need a soak of more than 1 GiB of runs to show it.
	retentionVlogFile = 16 << 20
)

// retentionFigures is what the phase measured on one store.
type retentionFigures struct {
	store        string
	bytesPerRun  float64
	samples      []int64 // stored bytes during the soak
	settled      int64
	expired      int
	window, soak time.Duration
}

// sizer is the part of a store the phase reads.
type sizer interface {
	store.Store
	store.Expirer
}

func (rep *report) retention(ctx context.Context, tmp string, cfg *config) error {
	var figs []retentionFigures
	logf("retention: badger")
	dir := filepath.Join(tmp, "retention-badger")
	bs, err := badger.Open(dir, badger.Options{ValueLogFileSize: retentionVlogFile})
	if err != nil {
		return err
	}
	f, err := soakRetention(ctx, "badger", bs, cfg)
	bs.Close()
	os.RemoveAll(dir)
	if err != nil {
		return err
	}
	figs = append(figs, f)
	if url := os.Getenv("SDR_TEST_POSTGRES_URL"); url != "" {
		logf("retention: postgres")
		db, ps, err := openPGScratch(ctx, url, "retention")
		if err != nil {
			return err
		}
		defer db.close()
		f, err := soakRetention(ctx, "postgres", ps, cfg)
		ps.Close()
		if err != nil {
			return err
		}
		figs = append(figs, f)
	}
	w := rep.section("11")
	fmt.Fprintf(w, "\n8. Stored bytes per run and the store's size under a soak with run_retention on\n")
	fmt.Fprintf(w, "   runs of %d records (%d B of records), %d callers; badger value-log files of %d MiB (GC's unit)\n",
		settleRecords, settleDataBytes(), retentionCallers, retentionVlogFile>>20)
	for _, f := range figs {
		fmt.Fprintf(w, "   %-8s stored bytes per run %.0f (%.2f of the records' bytes)\n", f.store, f.bytesPerRun, f.bytesPerRun/float64(settleDataBytes()))
		fmt.Fprintf(w, "   %-8s soak %s, retention %s: %d runs settled, %d expired; stored MiB every %s:",
			f.store, f.soak, f.window, f.settled, f.expired, f.soak/10)
		for _, s := range f.samples {
			fmt.Fprintf(w, " %.1f", float64(s)/(1<<20))
		}
		first, second := mean(f.samples[:len(f.samples)/2]), mean(f.samples[len(f.samples)/2:])
		flat := second <= first*1.25
		fmt.Fprintf(w, "\n   %-8s mean of the first half %.1f MiB, of the second half %.1f MiB (peak %.1f): %s\n", f.store,
			first/(1<<20), second/(1<<20), float64(peak(f.samples))/(1<<20), map[bool]string{true: "flat", false: "GROWING"}[flat])
		rep.check(f.store+" disk under a retention soak", fmt.Sprintf("2nd-half mean %.0f%% of 1st-half mean", 100*second/max(first, 1)), "≤ 125 %", flat)
		rep.info(f.store+" stored bytes per run", fmt.Sprintf("%.0f B", f.bytesPerRun), fmt.Sprintf("runs of %d B of records", settleDataBytes()))
	}
	return nil
}

// mean is the mean of xs (0 for none).
func mean(xs []int64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += float64(x)
	}
	return sum / float64(max(len(xs), 1))
}

// peak is the largest of xs (0 for none).
func peak(xs []int64) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// soakRetention measures bytes per run on s, then soaks it with retention.
func soakRetention(ctx context.Context, name string, s sizer, cfg *config) (retentionFigures, error) {
	f := retentionFigures{store: name, window: cfg.retentionWindow, soak: cfg.soak}
	st, err := newSettleSetup(ctx, s)
	if err != nil {
		return f, err
	}
	before, err := s.StoredBytes(ctx)
	if err != nil {
		return f, err
	}
	if err := settleN(ctx, st, retentionRuns); err != nil {
		return f, err
	}
	if b, ok := s.(interface{ Sync() error }); ok {
		_ = b.Sync()
	}
	after, err := s.StoredBytes(ctx)
	if err != nil {
		return f, err
	}
	f.bytesPerRun = float64(after-before) / retentionRuns

	var expired atomic.Int64
	logger, _ := zap.NewDevelopment(zap.IncreaseLevel(zap.InfoLevel))
	r := &retention.Runner{Store: countingExpirer{s, &expired}, Window: cfg.retentionWindow,
		ReclaimEvery: retentionVlogFile, Logger: logger}
	r.Start()
	sctx, cancel := context.WithTimeout(ctx, cfg.soak)
	defer cancel()
	var wg sync.WaitGroup
	var settleErr atomic.Pointer[error]
	for c := range retentionCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int64(0); n < cfg.max && sctx.Err() == nil; n++ {
				if err := st.settleOnce(sctx, settleAccount(c)); err != nil && sctx.Err() == nil {
					settleErr.Store(&err)
					return
				}
			}
		}()
	}
	tick := time.NewTicker(cfg.soak / 10)
	for done := false; !done; {
		select {
		case <-sctx.Done():
			done = true
		case <-tick.C:
			n, err := s.StoredBytes(ctx)
			if err != nil {
				cancel()
				wg.Wait()
				r.Stop()
				return f, err
			}
			f.samples = append(f.samples, n)
		}
	}
	tick.Stop()
	wg.Wait()
	r.Stop()
	if e := settleErr.Load(); e != nil {
		return f, *e
	}
	f.settled = st.done.Load() - retentionRuns
	f.expired = int(expired.Load())
	return f, nil
}

// settleN settles n runs from retentionCallers callers.
func settleN(ctx context.Context, st *settleSetup, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, retentionCallers)
	for c := range retentionCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := st.settleOnce(ctx, settleAccount(c)); err != nil {
					errs[c] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// countingExpirer counts the runs its store expires.
type countingExpirer struct {
	store.Expirer
	n *atomic.Int64
}

func (c countingExpirer) ExpireRuns(ctx context.Context, cutoff, now time.Time, limit int) (store.ExpireResult, error) {
	res, err := c.Expirer.ExpireRuns(ctx, cutoff, now, limit)
	c.n.Add(int64(res.Runs))
	return res, err
}
