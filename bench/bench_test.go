package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"socialrouter/caddymodule/runs"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"p50 of 4 is the 2nd", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(seq(1, 100)...), 0.99, 99 * time.Millisecond},
		{"p100 is the max", ms(1, 2, 3), 1, 3 * time.Millisecond},
		{"p0 is the min", ms(1, 2, 3), 0, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.q); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.q, got, tc.want)
			}
		})
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), tc.xs...)
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
		if len(in) > 0 && !equalFloats(in, tc.xs) {
			t.Errorf("median reordered its input: %v", tc.xs)
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPruneNullsIsDelNulls(t *testing.T) {
	var v any
	in := `{"a":null,"b":[1,null,{"c":null,"d":2}],"e":{"f":null},"g":"x"}`
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(pruneNulls(v))
	if want := `{"b":[1,{"d":2}],"e":{},"g":"x"}`; string(got) != want {
		t.Errorf("pruneNulls(%s) = %s, want %s", in, got, want)
	}
}

func TestSpliceRunMatchesEncodingJSON(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, data := range [][]json.RawMessage{
		{json.RawMessage(`{"a":1}`), json.RawMessage(`{"b":"x\u0026y"}`)},
		{},
	} {
		run := &runs.Run{ID: "ext_1", Status: "completed", URL: "https://e/x", Data: data, CreatedAt: now, CompletedAt: now,
			Pagination: runs.Pagination{Total: len(data), Returned: len(data)}}
		want, err := json.Marshal(run)
		if err != nil {
			t.Fatal(err)
		}
		got, err := spliceRun(run)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("spliceRun = %s, %v\nwant %s", got, err, want)
		}
	}
}

func TestSameJSON(t *testing.T) {
	if !sameJSON([]byte(`{"a":"x&y","b":1}`), []byte(`{"b":1,"a":"x\u0026y"}`)) {
		t.Error("key order and escaping should not matter")
	}
	if sameJSON([]byte(`{"a":1}`), []byte(`{"a":2}`)) {
		t.Error("different values compared equal")
	}
}

func TestBracelessKeepsTheSize(t *testing.T) {
	in := []byte(`{"data":[{"a":"{x}"}]}`)
	got := braceless(in)
	if len(got) != len(in) || strings.ContainsAny(got, "{}") {
		t.Errorf("braceless(%s) = %s", in, got)
	}
}

func TestPprofTable(t *testing.T) {
	out := `File: caddy
Type: cpu
Duration: 5s, Total samples = 1s (20%)
Showing nodes accounting for 1s, 100% of 1s total
      flat  flat%   sum%        cum   cum%
     0.5s 50% 50% 0.5s 50%  a
     0.3s 30% 80% 0.3s 30%  b
     0.2s 20% 100% 0.2s 20%  c
`
	got := pprofTable(out, 2)
	for _, want := range []string{"Duration: 5s", "flat%", "  a", "  b"} {
		if !strings.Contains(got, want) {
			t.Errorf("pprofTable lost %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"File:", "Type:", "20%  c"} {
		if strings.Contains(got, gone) {
			t.Errorf("pprofTable kept %q:\n%s", gone, got)
		}
	}
}

func TestProcReaders(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc on this system")
	}
	if kib := memKiB(os.Getpid(), "VmHWM"); kib <= 0 {
		t.Errorf("memKiB(VmHWM) = %d", kib)
	}
	if kib := memKiB(os.Getpid(), "NoSuchField"); kib != 0 {
		t.Errorf("memKiB(NoSuchField) = %d, want 0", kib)
	}
	if d := cpuTime(os.Getpid()); d < 0 {
		t.Errorf("cpuTime = %v", d)
	}
	if d := cpuTime(-1); d != 0 {
		t.Errorf("cpuTime of no process = %v, want 0", d)
	}
}

// TestErrKind: calls failing alike on different connections count as one
// kind of error in the in-flight phase's note.
func TestErrKind(t *testing.T) {
	a := errKind(errors.New(`Post "http://127.0.0.1:41234/v1/extract/x": read tcp 127.0.0.1:50112->127.0.0.1:41234: read: connection reset by peer`))
	b := errKind(errors.New(`Post "http://127.0.0.1:41234/v1/extract/x": read tcp 127.0.0.1:50999->127.0.0.1:41234: read: connection reset by peer`))
	if a != b || strings.Contains(a, "50112") {
		t.Errorf("errKind: %q and %q", a, b)
	}
	if got := countsText(map[string]int{"b": 2, "a": 1}); got != "a 1, b 2" {
		t.Errorf("countsText = %q", got)
	}
}
