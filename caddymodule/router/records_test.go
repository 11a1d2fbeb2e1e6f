package router

import (
	"encoding/json"
	"testing"
)

// TestRecordsPlace: kept records land under their inputs in the order
// kept, dropped ones nowhere; the placed bytes are a copy of exactly
// the kept records (the scratch buffer, reused by the next batch, does
// not show through), and each record is capped at its end.
func TestRecordsPlace(t *testing.T) {
	type write struct {
		k    int
		rec  string
		keep bool
	}
	tests := []struct {
		name   string
		writes []write
		want   [][]string
	}{
		{"none", nil, [][]string{nil, nil}},
		{"all kept, two inputs", []write{{0, `{"a":1}`, true}, {1, `{"b":2}`, true}, {0, `{"c":3}`, true}},
			[][]string{{`{"a":1}`, `{"c":3}`}, {`{"b":2}`}}},
		{"dropped between kept", []write{{0, `{"a":1}`, true}, {0, `{"bad":true}`, false}, {1, `{"b":2}`, true}},
			[][]string{{`{"a":1}`}, {`{"b":2}`}}},
		{"only dropped", []write{{1, `{"bad":true}`, false}}, [][]string{nil, nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecords()
			kept := 0
			for _, w := range tc.writes {
				start := r.at()
				*r.buf = append(*r.buf, w.rec...)
				if got := string(r.record(start)); got != w.rec {
					t.Fatalf("record(%d) = %s, want %s", start, got, w.rec)
				}
				if w.keep {
					r.keep(w.k, start)
					kept += len(w.rec)
				} else {
					r.drop(start)
				}
			}
			scratch := r.buf
			per := make([][]json.RawMessage, 2)
			r.place(per)
			// The scratch buffer goes back to the pool: overwrite it as
			// the next batch would.
			b := (*scratch)[:cap(*scratch)]
			for i := range b {
				b[i] = 'x'
			}
			size := 0
			for k := range per {
				if len(per[k]) != len(tc.want[k]) {
					t.Fatalf("input %d: %d records, want %d", k, len(per[k]), len(tc.want[k]))
				}
				for i, rec := range per[k] {
					if string(rec) != tc.want[k][i] {
						t.Errorf("input %d record %d = %s, want %s", k, i, rec, tc.want[k][i])
					}
					if cap(rec) != len(rec) {
						t.Errorf("input %d record %d: cap %d over its length %d", k, i, cap(rec), len(rec))
					}
					size += len(rec)
				}
			}
			if size != kept {
				t.Errorf("placed %d bytes, want the %d kept", size, kept)
			}
			if r.buf != nil {
				t.Error("place kept the scratch buffer")
			}
		})
	}
}
