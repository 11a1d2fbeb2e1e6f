package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/internal/heappeak"
)

// badgerConfig is one set of badger options under test.
type badgerConfig struct {
	name string
	opts func(dir string) bdb.Options
}

// badgerConfigs are badger's defaults (how the store opened it before the
// change this measurement motivated) and the options the heap profile
// suggested: run documents (tens of KiB) in the value
// log instead of the LSM tree, and small memtables and block cache.
var badgerConfigs = []badgerConfig{
	{"badger defaults + SyncWrites (the store before round 2)", func(dir string) bdb.Options {
		return bdb.DefaultOptions(dir).WithSyncWrites(true).WithLogger(nil).WithMetricsEnabled(false)
	}},
	{"ValueThreshold 1 KiB, MemTableSize 16 MiB ×2, BlockCache 32 MiB", func(dir string) bdb.Options {
		return bdb.DefaultOptions(dir).WithSyncWrites(true).WithLogger(nil).WithMetricsEnabled(false).
			WithValueThreshold(1 << 10).WithMemTableSize(16 << 20).WithNumMemtables(2).WithBlockCacheSize(32 << 20)
	}},
}

// badgerRun is what one config did in one round.
type badgerRun struct {
	settles  float64 // settles/s
	peakHeap uint64  // highest sampled HeapInuse, bytes
	liveHeap uint64  // HeapInuse after a forced GC at the end, bytes
}

// badgerOptions writes what a settle writes (a run document of an N = 10
// run, the balance, the usage rollup, four key-spend buckets), in
// transactions of 32 settles as the store's group commit does with 32
// callers, on a fresh database per config and round, and reports settles/s
// and the Go heap.
func (rep *report) badgerOptions(ctx context.Context, tmp string, cfg *config) error {
	w := rep.section("6b")
	doc := make([]byte, 0, settleDataBytes()+settleRecords+400)
	doc = append(doc, `{"id":"ext_x","status":"completed","data":[`...)
	for i, r := range settleData {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, r...)
	}
	doc = append(doc, `]}`...)

	res := make([][]badgerRun, len(badgerConfigs))
	dirs := make([]string, len(badgerConfigs))
	for i := range dirs {
		d, err := os.MkdirTemp(tmp, "badger-opts-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dirs[i] = d
	}
	var seq uint64
	for r := 0; r < cfg.rounds && ctx.Err() == nil; r++ {
		for i, c := range badgerConfigs {
			br, err := badgerRound(ctx, dirs[i], c, doc, 2*time.Second, &seq)
			if err != nil {
				return fmt.Errorf("badger %s: %v", c.name, err)
			}
			logf("badger options %d round %d: %.0f settles/s, peak heap %d MiB", i, r+1, br.settles, br.peakHeap>>20)
			res[i] = append(res[i], br)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(w, "    badger alone, transactions of 32 settles (7 reads; writes of a %d B run document and 6 small keys each), fsync on;\n", len(doc))
	fmt.Fprintf(w, "    one database per option set, closed between rounds and reopened (each round adds to the data), rounds interleaved:\n")
	fmt.Fprintf(w, "      %-66s %10s %16s %16s\n", "options", "settles/s", "peak heap MiB", "live heap MiB")
	for i, c := range badgerConfigs {
		var s, p, l []float64
		for _, br := range res[i] {
			s = append(s, br.settles)
			p = append(p, float64(br.peakHeap)/(1<<20))
			l = append(l, float64(br.liveHeap)/(1<<20))
		}
		fmt.Fprintf(w, "      %-66s %10.0f %16.0f %16.0f\n", c.name, median(s), median(p), median(l))
	}
	fmt.Fprintln(w)
	return nil
}

// badgerRound opens the database in dir (so that only one is open while
// the heap is sampled; each round adds to what the previous ones wrote),
// settles for dur and closes it.
func badgerRound(ctx context.Context, dir string, c badgerConfig, doc []byte, dur time.Duration, seq *uint64) (badgerRun, error) {
	runtime.GC()
	db, err := bdb.Open(c.opts(dir))
	if err != nil {
		return badgerRun{}, err
	}
	defer db.Close()

	stopHeap := heappeak.Sample(50 * time.Millisecond)

	key := func(prefix string, acct int, n uint64) []byte {
		k := make([]byte, 0, 40)
		k = append(k, prefix...)
		k = fmt.Appendf(k, "acct_%02d/", acct)
		return binary.BigEndian.AppendUint64(k, n)
	}
	val := make([]byte, 8)
	settles := 0
	start := time.Now()
	for time.Since(start) < dur && ctx.Err() == nil && settles < 1_000_000 {
		err := db.Update(func(txn *bdb.Txn) error {
			for range 32 {
				*seq++
				n := *seq
				acct := int(n % settleAccounts)
				// The reads of a settle: balance, run id free, usage row,
				// four key-spend buckets.
				for _, k := range [][]byte{key("a/", acct, 0), key("r/", acct, n), key("u/", acct, 0),
					key("k/", acct, 0), key("k/", acct, 1), key("k/", acct, 2), key("k/", acct, 3)} {
					if _, err := txn.Get(k); err != nil && err != bdb.ErrKeyNotFound {
						return err
					}
				}
				entries := [][2][]byte{
					{key("r/", acct, n), doc},
					{key("a/", acct, 0), val},
					{key("u/", acct, 0), []byte(`{"requests":1,"records":10,"credits":17250}`)},
				}
				for p := range 4 {
					entries = append(entries, [2][]byte{key("k/", acct, uint64(p)), val})
				}
				for _, e := range entries {
					if err := txn.Set(e[0], e[1]); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			stopHeap()
			return badgerRun{}, err
		}
		settles += 32
	}
	el := time.Since(start)
	peak := stopHeap()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return badgerRun{settles: float64(settles) / el.Seconds(), peakHeap: peak, liveHeap: ms.HeapInuse}, nil
}
