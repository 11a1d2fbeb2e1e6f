package normalize_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"testing"
	"time"

	"socialrouter/internal/cpuclock"
	"socialrouter/internal/jsonscan"
)

// BenchmarkNormalize/<offer>/<service>/{fast,gojq,roundtrip,scan} measures
// one record per op, cycling over the offer's fixture items that yield a
// record: NormalizeCheckedItem on the plan (fast, as the router runs it on
// items its splitter checked), gojq alone (decode, run, marshal), and two
// yardsticks: encoding/json decoding the item into any and encoding it
// again (roundtrip), and one strict jsonscan check of the item's bytes
// (scan: the least any reader of the whole item does; issue 38 holds fast
// to ≤ 4 × it).
//
// fast and gojq also report x_roundtrip and x_scan, their time over the
// yardsticks'.
// The two are timed in alternating passes over the items after the
// benchmark loop, so that a machine whose load drifts slows both alike.
//
//	go test -run '^$' -bench BenchmarkNormalize -benchmem ./caddymodule/normalize/
func BenchmarkNormalize(b *testing.B) {
	files := fpLoadFixtures(b)
	for _, o := range fpOffers(b) {
		p := o.offer.Normalize
		input := o.service.Accepts[0].Example
		var items [][]byte
		size := 0
		for _, item := range o.ownItems(files) {
			if _, ok, err := p.NormalizeGojq(context.Background(), item, input, fpNow); ok && err == nil {
				items = append(items, item)
				size += len(item)
			}
		}
		if len(items) == 0 {
			continue
		}
		engines := []struct {
			name string
			run  func(item []byte) error
		}{
			{"fast", func(item []byte) error {
				_, _, err := p.NormalizeCheckedItem(context.Background(), item, input, fpNow)
				return err
			}},
			{"gojq", func(item []byte) error {
				_, _, err := p.NormalizeGojq(context.Background(), item, input, fpNow)
				return err
			}},
			{"roundtrip", fpRoundTrip},
			{"scan", fpScan},
		}
		for _, eng := range engines {
			b.Run(o.offer.ID+"/"+o.service.Key+"/"+eng.name, func(b *testing.B) {
				b.SetBytes(int64(size / len(items)))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if err := eng.run(items[i%len(items)]); err != nil {
						b.Fatal(err)
					}
				}
				if eng.name == "fast" || eng.name == "gojq" {
					b.ReportMetric(fpRatio(items, eng.run, fpRoundTrip), "x_roundtrip")
					b.ReportMetric(fpRatio(items, eng.run, fpScan), "x_scan")
				}
			})
		}
	}
}

// fpRoundTrip is the yardstick: decode into any, encode.
func fpRoundTrip(item []byte) error {
	var v any
	if err := json.Unmarshal(item, &v); err != nil {
		return err
	}
	_, err := json.Marshal(v)
	return err
}

// fpScan is the other yardstick: one strict check of the item's bytes.
func fpScan(item []byte) error {
	c := jsonscan.Get()
	defer jsonscan.Put(c)
	if !c.Valid(jsonscan.Bytes(item)) {
		return errors.New("invalid item")
	}
	return nil
}

// fpRatio times f and ref in alternating passes over items, for 300ms of
// CPU at least, and returns f's total CPU time over ref's (cpuclock.Thread).
func fpRatio(items [][]byte, f, ref func([]byte) error) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var tf, tr time.Duration
	pass := func(g func([]byte) error) time.Duration {
		start := cpuclock.Thread()
		for range 8 {
			for _, item := range items {
				_ = g(item)
			}
		}
		return cpuclock.Thread() - start
	}
	for tf+tr < 300*time.Millisecond {
		tf += pass(f)
		tr += pass(ref)
	}
	return float64(tf) / float64(tr)
}
