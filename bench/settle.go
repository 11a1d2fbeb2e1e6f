package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
	"socialrouter/caddymodule/store/postgres"
)

// Settle benchmark parameters: what one settle writes is what an N = 10
// extraction of pro_net/profile.info writes (ten records of about the size
// the normalizer produces, at the offer's price).
const (
	settleAccounts = 32   // separate accounts, one per caller at 32 callers
	settleRecords  = 10   // records per settled run
	settleRecSize  = 2900 // bytes per record, as a normalized profile
	settlePrice    = credits.Micros(1725)
)

// settleRecord is one synthetic record of settleRecSize bytes.
var settleRecord = func() json.RawMessage {
	rec := map[string]any{
		"source": "pro_net", "name": "Richard Branson", "headline": "Founder at Virgin Group",
		"input_url": "https://www.linkedin.com/in/rbranson/", "follower_count": 18730516,
	}
	b, _ := json.Marshal(rec)
	pad := settleRecSize - len(b) - len(`,"about":""`)
	if pad < 0 {
		pad = 0
	}
	rec["about"] = strings.Repeat("x", pad)
	b, _ = json.Marshal(rec)
	return b
}()

// settleSetup is a store with separate accounts and one hot account, each
// with a key.
type settleSetup struct {
	s   store.Store
	seq atomic.Int64
}

func newSettleSetup(ctx context.Context, s store.Store) (*settleSetup, error) {
	now := time.Now().UTC()
	huge := credits.Micros(1_000_000_000) * credits.PerCredit
	for i := 0; i <= settleAccounts; i++ {
		id := settleAccount(i)
		if _, err := s.CreateAccount(ctx, id, huge, now); err != nil {
			return nil, fmt.Errorf("creating account %s: %v", id, err)
		}
		k := store.Key{ID: "key_" + id, AccountID: id, Name: "bench", Hash: sha256.Sum256([]byte(id)), Display: "sdr_live_…" + id, CreatedAt: now}
		if err := s.CreateKey(ctx, k); err != nil {
			return nil, fmt.Errorf("creating key of %s: %v", id, err)
		}
	}
	return &settleSetup{s: s}, nil
}

// settleAccount names account i; i == settleAccounts is the hot one.
func settleAccount(i int) string {
	if i == settleAccounts {
		return "hot"
	}
	return fmt.Sprintf("acct_%02d", i)
}

// settleOnce settles one completed run of settleRecords records on account.
func (st *settleSetup) settleOnce(ctx context.Context, account string) error {
	now := time.Now().UTC()
	data := make([]json.RawMessage, settleRecords)
	for i := range data {
		data[i] = settleRecord
	}
	id := "ext_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), rand.Reader).String())
	run := &runs.Run{
		ID: id, Status: "completed", Platform: "pro_net", Service: "profile.info",
		URL: "https://www.linkedin.com/in/rbranson", ServedBy: "source_b/pro_net",
		Data: data, Pagination: runs.Pagination{Total: settleRecords},
		CreatedAt: now, CompletedAt: now,
		Attempts:  []runs.Attempt{{Offer: "source_b/pro_net", Outcome: "ok", Status: 200, DurationMS: 3, Records: settleRecords}},
		AccountID: account, KeyID: "key_" + account,
	}
	res, err := st.s.Settle(ctx, store.Settlement{Run: run, Price: settlePrice, Offer: "source_b/pro_net", Platform: "pro_net", Now: now})
	if err != nil {
		return err
	}
	if res.Records != settleRecords {
		return fmt.Errorf("settled %d of %d records", res.Records, settleRecords)
	}
	return nil
}

// settleRound runs callers goroutines settling for dur (at most max
// settles) and returns settles per second. hot puts every caller on one
// account; otherwise each caller has its own (a single caller cycles
// through them).
func (st *settleSetup) settleRound(ctx context.Context, callers int, hot bool, dur time.Duration, max int64) (float64, error) {
	var (
		issued, done atomic.Int64
		wg           sync.WaitGroup
		errOnce      sync.Once
		firstErr     error
	)
	deadline := time.Now().Add(dur)
	start := time.Now()
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; time.Now().Before(deadline) && issued.Add(1) <= max && ctx.Err() == nil; j++ {
				acct := settleAccount(settleAccounts)
				if !hot {
					acct = settleAccount((c + j*callers) % settleAccounts)
				}
				if err := st.settleOnce(ctx, acct); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(done.Load()) / time.Since(start).Seconds(), ctx.Err()
}

// settleFigures is the medians of one store at one caller count.
type settleFigures struct {
	store     string
	callers   int
	separate  float64 // settles/s, callers on separate accounts
	hot       float64 // settles/s, every caller on one account
	sepRounds []float64
	hotRounds []float64
}

// benchSettles measures each caller count in interleaved rounds:
// separate, one account, separate, one account, …
func benchSettles(ctx context.Context, name string, s store.Store, callerCounts []int, rounds int, dur time.Duration, max int64) ([]settleFigures, error) {
	st, err := newSettleSetup(ctx, s)
	if err != nil {
		return nil, err
	}
	// Warm up: open the value log, fill the caches.
	if _, err := st.settleRound(ctx, 8, false, 200*time.Millisecond, max); err != nil {
		return nil, err
	}
	var out []settleFigures
	for _, n := range callerCounts {
		f := settleFigures{store: name, callers: n}
		for r := 0; r < rounds; r++ {
			sep, err := st.settleRound(ctx, n, false, dur, max)
			if err != nil {
				return nil, fmt.Errorf("%s, %d callers, separate accounts: %v", name, n, err)
			}
			hot, err := st.settleRound(ctx, n, true, dur, max)
			if err != nil {
				return nil, fmt.Errorf("%s, %d callers, one account: %v", name, n, err)
			}
			f.sepRounds = append(f.sepRounds, sep)
			f.hotRounds = append(f.hotRounds, hot)
			logf("settle %s %2d callers round %d: separate %.0f/s, one account %.0f/s", name, n, r+1, sep, hot)
		}
		f.separate, f.hot = median(f.sepRounds), median(f.hotRounds)
		out = append(out, f)
	}
	return out, nil
}

// benchBadgerSettles runs the settle rounds on a fresh badger store with
// the production options (every commit fsynced).
func benchBadgerSettles(ctx context.Context, tmp string, cfg config) ([]settleFigures, error) {
	dir, err := os.MkdirTemp(tmp, "settle-badger-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	s, err := badger.Open(dir, badger.Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return benchSettles(ctx, "badger", s, []int{1, 32}, cfg.rounds, cfg.settleRound, cfg.max)
}

// benchPostgresSettles runs the 32-caller settle rounds in a fresh schema
// of the database at url, and drops the schema afterwards. It also returns
// the pool size in effect.
func benchPostgresSettles(ctx context.Context, url string, cfg config) ([]settleFigures, int32, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, 0, fmt.Errorf("parsing SDR_TEST_POSTGRES_URL: %v", err)
	}
	schema := fmt.Sprintf("sdr_bench_%d_%d", os.Getpid(), time.Now().UnixNano())
	defer func() {
		// A pool from the parsed config, since the URL may carry pool
		// settings a plain connection refuses.
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pool, err := pgxpool.NewWithConfig(dctx, pc)
		if err != nil {
			logf("dropping schema %s: %v", schema, err)
			return
		}
		defer pool.Close()
		if _, err := pool.Exec(dctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			logf("dropping schema %s: %v", schema, err)
		}
	}()
	s, err := postgres.Open(ctx, url, postgres.WithSchema(schema))
	if err != nil {
		return nil, 0, err
	}
	defer s.Close()
	f, err := benchSettles(ctx, "postgres", s, []int{32}, cfg.rounds, cfg.settleRound, cfg.max)
	return f, pc.MaxConns, err
}
