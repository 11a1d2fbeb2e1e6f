package normalize_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkNormalize/<offer>/<service>/{fast,gojq,roundtrip} measures one
// record per op, cycling over the offer's fixture items that yield a
// record: NormalizeItem on the plan (fast), gojq alone (decode, run,
// marshal) and, as the yardstick, encoding/json decoding the item into any
// and encoding it again (roundtrip).
//
// fast and gojq also report x_roundtrip, their time over the yardstick's.
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
				_, _, err := p.NormalizeItem(context.Background(), item, input, fpNow)
				return err
			}},
			{"gojq", func(item []byte) error {
				_, _, err := p.NormalizeGojq(context.Background(), item, input, fpNow)
				return err
			}},
			{"roundtrip", fpRoundTrip},
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
				if eng.name != "roundtrip" {
					b.ReportMetric(fpRatio(items, eng.run, fpRoundTrip), "x_roundtrip")
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

// fpRatio times f and ref in alternating passes over items, for 300ms at
// least, and returns f's total time over ref's.
func fpRatio(items [][]byte, f, ref func([]byte) error) float64 {
	var tf, tr time.Duration
	pass := func(g func([]byte) error) time.Duration {
		start := time.Now()
		for range 8 {
			for _, item := range items {
				_ = g(item)
			}
		}
		return time.Since(start)
	}
	for tf+tr < 300*time.Millisecond {
		tf += pass(f)
		tr += pass(ref)
	}
	return float64(tf) / float64(tr)
}
