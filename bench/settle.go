package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
	"socialrouter/services"
)

// Settle benchmark parameters: what one settle writes is what an N = 10
// extraction writes: ten records, at the offer's price. The records are
// ten distinct objects of the simulator's fixtures (profiles, companies,
// places, posts; about 27 KB in all), real JSON text rather than padding,
// since run documents are stored compressed and padding would compress to
// nothing.
const (
	settleAccounts = 32 // separate accounts, one per caller at 32 callers
	settleRecords  = 10 // records per settled run
	settlePrice    = credits.Micros(1725)
)

// settleData is the records of every settled run.
var settleData = func() []json.RawMessage {
	var out []json.RawMessage
	for _, dir := range []string{"source_b", "source_a"} {
		names, _ := fs.Glob(services.FS, "examples/"+dir+"/*.json")
		for _, name := range names {
			raw, err := fs.ReadFile(services.FS, name)
			var items []json.RawMessage
			if err != nil || json.Unmarshal(raw, &items) != nil {
				continue
			}
			for _, it := range items {
				var c bytes.Buffer
				if json.Compact(&c, it) != nil || c.Len() == 0 || c.Bytes()[0] != '{' {
					continue
				}
				if out = append(out, c.Bytes()); len(out) == settleRecords {
					return out
				}
			}
		}
	}
	panic(fmt.Sprintf("bench: the simulator's fixtures hold %d records, want %d", len(out), settleRecords))
}()

// settleDataBytes is the size of settleData.
func settleDataBytes() int {
	n := 0
	for _, r := range settleData {
		n += len(r)
	}
	return n
}

// settleSetup is a store with separate accounts and one hot account, each
// with a key.
type settleSetup struct {
	s    store.Store
	done atomic.Int64 // settles completed
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
	data := append([]json.RawMessage(nil), settleData...)
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
	st.done.Add(1)
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
	// Per settle over every round of this caller count, in this process:
	// CPU (user, system: the fsyncs and msyncs, the page faults of the
	// mmapped value log) and bytes written to storage; ok false where not
	// measured.
	userUS, sysUS, written float64
	usageOK                bool
	// serverUS is the database's CPU per settle (PostgreSQL's backends of
	// the bench's connections); serverOK false where not measured.
	serverUS float64
	serverOK bool
	// perGroup is the settles per group transaction (a store that groups
	// settles, PostgreSQL's); 0 where not reported.
	perGroup float64
}

// settleGroups is the groups of settles s ran so far (0, false when s does
// not group them).
func settleGroups(s store.Store) (int64, bool) {
	g, ok := s.(interface{ SettleGroups() int64 })
	if !ok {
		return 0, false
	}
	return g.SettleGroups(), true
}

// benchSettles measures each caller count in interleaved rounds:
// separate then one account, one account then separate, …
// server, when not nil, reads the database's CPU time so far.
//
// Then it measures the reservation step on the same store (benchReserve):
// the served path, then the failed one.
func benchSettles(ctx context.Context, name string, s store.Store, server func(context.Context) time.Duration,
	callerCounts []int, rounds int, dur time.Duration, max int64) ([]settleFigures, []reserveFigures, error) {
	var res []reserveFigures
	st, err := newSettleSetup(ctx, s)
	if err != nil {
		return nil, res, err
	}
	// Warm up: open the value log, fill the caches.
	if _, err := st.settleRound(ctx, 8, false, 200*time.Millisecond, max); err != nil {
		return nil, res, err
	}
	var out []settleFigures
	for _, n := range callerCounts {
		f := settleFigures{store: name, callers: n}
		u0, s0, w0, ok0 := selfUsage()
		var srv0 time.Duration
		if server != nil {
			srv0 = server(ctx)
		}
		n0 := st.done.Load()
		g0, grouped := settleGroups(s)
		for r := 0; r < rounds; r++ {
			// A B, B A, A B, …: the store slows as it fills (its first
			// rounds at one caller ran up to 1.7 × its later ones), which
			// favoured whichever ran first in every round.
			var sep, hot float64
			for _, one := range []bool{r%2 == 1, r%2 == 0} {
				v, err := st.settleRound(ctx, n, one, dur, max)
				if err != nil {
					what := "separate accounts"
					if one {
						what = "one account"
					}
					return nil, res, fmt.Errorf("%s, %d callers, %s: %v", name, n, what, err)
				}
				if one {
					hot = v
				} else {
					sep = v
				}
			}
			f.sepRounds = append(f.sepRounds, sep)
			f.hotRounds = append(f.hotRounds, hot)
			logf("settle %s %2d callers round %d: separate %.0f/s, one account %.0f/s", name, n, r+1, sep, hot)
		}
		f.separate, f.hot = median(f.sepRounds), median(f.hotRounds)
		if u1, s1, w1, ok1 := selfUsage(); ok0 && ok1 {
			if k := float64(st.done.Load() - n0); k > 0 {
				f.userUS, f.sysUS = float64((u1-u0).Microseconds())/k, float64((s1-s0).Microseconds())/k
				f.written, f.usageOK = float64(w1-w0)/k, true
				if g1, _ := settleGroups(s); grouped && g1 > g0 {
					f.perGroup = k / float64(g1-g0)
				}
				if server != nil {
					if d := server(ctx) - srv0; d > 0 {
						f.serverUS, f.serverOK = float64(d.Microseconds())/k, true
					}
				}
			}
		}
		out = append(out, f)
	}
	// 16 callers: the end-to-end phase's connections.
	logf("reservation step %s: Reserve alone (served path), Reserve + Release (failed path), 16 callers", name)
	served, failed, err := st.benchReserve(ctx, name, server, 16, rounds, dur, max)
	return out, []reserveFigures{served, failed}, err
}

// benchBadgerSettles runs the settle rounds on a fresh badger store with
// the production options (every commit fsynced).
func benchBadgerSettles(ctx context.Context, tmp string, cfg config) ([]settleFigures, []reserveFigures, error) {
	dir, err := os.MkdirTemp(tmp, "settle-badger-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	s, err := badger.Open(dir, badger.Options{})
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	return benchSettles(ctx, "badger", s, nil, []int{1, 32}, cfg.rounds, cfg.settleRound, cfg.max)
}

// benchPostgresSettles runs the 32-caller settle rounds in a fresh schema
// of the database at url, and drops the schema afterwards. It also returns
// a note on the set-up: the pool size in effect, and the server's
// autovacuum when it is off.
func benchPostgresSettles(ctx context.Context, url string, cfg config) ([]settleFigures, []reserveFigures, string, error) {
	db, s, err := openPGScratch(ctx, url, "settle")
	if err != nil {
		return nil, nil, "", err
	}
	defer db.close()
	defer s.Close()
	f, res, err := benchSettles(ctx, "postgres", s, db.serverCPU(), []int{32}, cfg.rounds, cfg.settleRound, cfg.max)
	note := fmt.Sprintf("pool of %d connections (pool_max_conns)%s", db.maxConns, db.vacuumNote())
	return f, res, note, err
}
