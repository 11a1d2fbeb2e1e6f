package badger_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
	"socialrouter/internal/heappeak"
)

// The benchmarks below use what an N = 10 extraction settles: ten records
// of about 2 900 bytes (a normalized profile), so a run document of about
// 29 KiB, as bench/ does.
const (
	docRecords = 10
	docRecSize = 2900
	docPrice   = credits.Micros(1725)
)

// docRecord is one synthetic record of docRecSize bytes.
var docRecord = func() json.RawMessage {
	head := `{"source":"pro_net","name":"Richard Branson","headline":"Founder at Virgin Group","follower_count":18730516,"about":"`
	return json.RawMessage(head + strings.Repeat("x", docRecSize-len(head)-2) + `"}`)
}()

// optionSets are the badger options compared: the store's own, and
// badger's defaults with every commit synced (what the store opened badger
// with before its memory-frugal options).
var optionSets = []struct {
	name string
	tune func(bdb.Options) bdb.Options
}{
	{"store", func(o bdb.Options) bdb.Options { return o }},
	{"badger_defaults", func(o bdb.Options) bdb.Options {
		d := bdb.DefaultOptions(o.Dir)
		return d.WithSyncWrites(o.SyncWrites).WithLogger(nil).WithMetricsEnabled(false)
	}},
}

// docRun builds a completed 10-record run on an account.
func docRun(id, account string) *runs.Run {
	data := make([]json.RawMessage, docRecords)
	for i := range data {
		data[i] = docRecord
	}
	now := time.Now().UTC()
	return &runs.Run{
		ID: id, Status: "completed", Platform: "pro_net", Service: "profile.info",
		URL: "https://www.linkedin.com/in/rbranson", ServedBy: "source_b/pro_net", Provider: "source_b",
		Data: data, Pagination: runs.Pagination{Total: docRecords},
		CreatedAt: now, CompletedAt: now,
		Attempts:  []runs.Attempt{{Offer: "source_b/pro_net", Outcome: "ok", Status: 200, DurationMS: 3, Records: docRecords}},
		AccountID: account, KeyID: "key_" + account,
	}
}

// seedAccounts creates n accounts acct_i, each with a key key_acct_i whose
// digest is sha256 of the account id, and a balance that never runs out.
func seedAccounts(tb testing.TB, s store.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	for i := range n {
		id := "acct_" + strconv.Itoa(i)
		if _, err := s.CreateAccount(ctx, id, credits.Micros(1)<<60, time.Now()); err != nil {
			tb.Fatal(err)
		}
		k := store.Key{ID: "key_" + id, AccountID: id, Hash: sha256.Sum256([]byte(id)), Display: "d", CreatedAt: time.Now()}
		if err := s.CreateKey(ctx, k); err != nil {
			tb.Fatal(err)
		}
	}
}

// procStatus returns the named fields of /proc/self/status in MiB (0 where
// unavailable).
func procStatus(fields ...string) map[string]float64 {
	out := map[string]float64{}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for _, want := range fields {
			if name == want {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				out[name] = kb / 1024
			}
		}
	}
	return out
}

// BenchmarkSettleDocs measures fsynced settles of 29 KiB runs (b.N settles
// by 1 or 32 callers, on separate accounts or all on one), with each badger
// option set, and reports settles/s and memory: the peak Go heap in use
// during the run, and the process's peak resident set (VmHWM) with its
// anonymous and file-backed (mmapped badger files) parts at the end. VmHWM
// only means something when one sub-benchmark runs alone in a process, e.g.
//
//	go test -run '^$' -bench 'SettleDocs/store/32/separate' -benchtime 6000x ./caddymodule/store/badger/
func BenchmarkSettleDocs(b *testing.B) {
	for _, o := range optionSets {
		for _, callers := range []int{1, 32} {
			for _, hot := range []bool{false, true} {
				mode := "separate"
				if hot {
					mode = "one_account"
				}
				b.Run(fmt.Sprintf("%s/%d/%s", o.name, callers, mode), func(b *testing.B) {
					benchSettleDocs(b, o.tune, callers, hot)
				})
			}
		}
	}
}

func benchSettleDocs(b *testing.B, tune func(bdb.Options) bdb.Options, callers int, hot bool) {
	s, err := badger.OpenTuned(b.TempDir(), badger.Options{}, tune)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const accounts = 32
	seedAccounts(b, s, accounts)
	ctx := context.Background()
	var seq atomic.Int64
	runtime.GC()
	stopHeap := heappeak.Sample(20 * time.Millisecond)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := seq.Add(1)
				if i > int64(b.N) {
					return
				}
				acct := "acct_0"
				if !hot {
					acct = "acct_" + strconv.Itoa(int(i)%accounts)
				}
				if _, err := s.Settle(ctx, store.Settlement{Run: docRun("ext_"+strconv.FormatInt(i, 10), acct),
					Price: docPrice, Offer: "source_b/pro_net", Platform: "pro_net", Now: time.Now()}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	peak := stopHeap()
	st := procStatus("VmHWM", "RssAnon", "RssFile")
	b.ReportMetric(float64(b.N)/el.Seconds(), "settles/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(st["VmHWM"], "VmHWM-MiB")
	b.ReportMetric(st["RssAnon"], "anon-MiB")
	b.ReportMetric(st["RssFile"], "file-MiB")
}

// BenchmarkReads measures the reads of a request: authentication
// (KeyByHash), the balance pre-check (GetAccount) and GET
// /v1/extractions/{id} (GetRun then json.Marshal, as the handler did, and
// GetRunJSON, checked to give the same bytes, into a reused buffer as the
// handler's pool gives it: from the run cache, and from badger on a store
// without one), idle and while background callers settle (reads
// then wait for badger's commit watermark unless served from memory).
func BenchmarkReads(b *testing.B) {
	for _, load := range []int{0, 8} {
		name := "idle"
		if load > 0 {
			name = "under_settles"
		}
		b.Run(name, func(b *testing.B) {
			s, err := badger.Open(b.TempDir(), badger.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const accounts = 16
			seedAccounts(b, s, accounts)
			ctx := context.Background()
			if _, err := s.Settle(ctx, store.Settlement{Run: docRun("ext_read", "acct_0"), Price: docPrice,
				Offer: "source_b/pro_net", Platform: "pro_net", Now: time.Now()}); err != nil {
				b.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var seq atomic.Int64
			for c := range load {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						i := seq.Add(1)
						acct := "acct_" + strconv.Itoa(1+c%(accounts-1))
						if _, err := s.Settle(ctx, store.Settlement{Run: docRun("ext_bg_"+strconv.FormatInt(i, 10), acct),
							Price: docPrice, Offer: "source_b/pro_net", Platform: "pro_net", Now: time.Now()}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			defer func() {
				close(stop)
				wg.Wait()
			}()
			uncached, err := badger.Open(b.TempDir(), badger.Options{RunCacheBytes: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer uncached.Close()
			seedAccounts(b, uncached, 1)
			if _, err := uncached.Settle(ctx, store.Settlement{Run: docRun("ext_read", "acct_0"), Price: docPrice,
				Offer: "source_b/pro_net", Platform: "pro_net", Now: time.Now()}); err != nil {
				b.Fatal(err)
			}
			hash := sha256.Sum256([]byte("acct_0"))
			want, err := s.GetRun(ctx, "acct_0", "ext_read")
			if err != nil {
				b.Fatal(err)
			}
			wantJSON, _ := json.Marshal(want)
			wantUncached, err := uncached.GetRun(ctx, "acct_0", "ext_read")
			if err != nil {
				b.Fatal(err)
			}
			wantUncachedJSON, _ := json.Marshal(wantUncached)
			var buf []byte
			reads := []struct {
				name string
				do   func() error
			}{
				{"KeyByHash", func() error { _, err := s.KeyByHash(ctx, hash); return err }},
				{"GetAccount", func() error { _, err := s.GetAccount(ctx, "acct_0"); return err }},
				{"GetRun+Marshal", func() error {
					r, err := s.GetRun(ctx, "acct_0", "ext_read")
					if err != nil {
						return err
					}
					j, err := json.Marshal(r)
					if err == nil && !bytes.Equal(j, wantJSON) {
						err = fmt.Errorf("run JSON differs")
					}
					return err
				}},
				{"GetRunJSON", func() error { return readInto(ctx, s, &buf, wantJSON) }},
				{"GetRunJSON_no_run_cache", func() error { return readInto(ctx, uncached, &buf, wantUncachedJSON) }},
			}
			for _, r := range reads {
				b.Run(r.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if err := r.do(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// readInto reads run ext_read of acct_0 into *buf, reused, and checks it
// is want.
func readInto(ctx context.Context, s *badger.Store, buf *[]byte, want []byte) error {
	j, err := s.GetRunJSON(ctx, (*buf)[:0], "acct_0", "ext_read")
	*buf = j
	if err == nil && !bytes.Equal(j, want) {
		err = fmt.Errorf("run JSON differs")
	}
	return err
}
