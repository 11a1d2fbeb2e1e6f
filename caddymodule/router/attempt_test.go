package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

// boundFake is a fake that promises to return once its context ends
// (sources.ReturnsOnCancel), as both real protocols do.
type boundFake struct{ *fake }

func (boundFake) ReturnsOnCancel() {}

// goroutineID reads the running goroutine's id from its stack header
// ("goroutine 42 [running]:"), to tell on which goroutine a batch ran.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return string(id)
}

// TestLoneBatchRunsInline: a client that returns on cancellation has its
// lone batch run on the caller's goroutine (one goroutine per held call);
// several batches, or a client without the promise, get goroutines of
// their own.
func TestLoneBatchRunsInline(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	tests := []struct {
		name   string
		bound  bool
		inputs int
		inline bool
	}{
		{"bound client, one batch", true, 1, true},
		{"bound client, several batches", true, 45, false},
		{"client without the promise", false, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran []string
			f := &fake{do: func(ctx context.Context, c sources.Call) (*sources.Result, error) {
				ran = append(ran, goroutineID()) // batches run one at a time below
				return echo(1)(ctx, c)
			}}
			var a sources.Client = f
			if tt.bound {
				a = boundFake{f}
			}
			r := New(Config{MaxParallelBatches: 1}, map[string]sources.Client{"source_a": a, "source_b": &fake{}}, NewBreakers(), nil)
			caller := goroutineID()
			if _, err := r.Run(context.Background(), Request{Service: svc, Inputs: urls(tt.inputs), Limit: tt.inputs}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(ran) == 0 || tt.inputs > 1 && len(ran) < 2 {
				t.Fatalf("the client was called %d times for %d inputs", len(ran), tt.inputs)
			}
			for _, id := range ran {
				if (id == caller) != tt.inline {
					t.Errorf("batch ran on goroutine %s, caller %s: want inline %v", id, caller, tt.inline)
				}
			}
		})
	}
}

// TestSplit: inputs are cut into batches of at most size, in order; no
// input still makes one (empty) batch, so the upstream is called once.
func TestSplit(t *testing.T) {
	tests := []struct {
		inputs []string
		size   int
		want   [][]string
	}{
		{nil, 3, [][]string{nil}},
		{[]string{"a"}, 3, [][]string{{"a"}}},
		{[]string{"a", "b", "c"}, 3, [][]string{{"a", "b", "c"}}},
		{[]string{"a", "b", "c", "d"}, 3, [][]string{{"a", "b", "c"}, {"d"}}},
		{[]string{"a", "b", "c", "d"}, 1, [][]string{{"a"}, {"b"}, {"c"}, {"d"}}},
		{[]string{"a", "b"}, 0, [][]string{{"a", "b"}}},
	}
	for _, tt := range tests {
		got := split(tt.inputs, tt.size)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("split(%v, %d) = %v, want %v", tt.inputs, tt.size, got, tt.want)
		}
		if len(got) > 1 && cap(got[0]) != len(got[0]) {
			t.Errorf("split(%v, %d): a batch can grow into the next (cap %d)", tt.inputs, tt.size, cap(got[0]))
		}
	}
	for _, tt := range []struct{ a, b, want string }{{"", "", ""}, {"x", "", "x"}, {"", "y", "y"}, {"x", "y", "x; y"}} {
		if got := joinMsg(tt.a, tt.b); got != tt.want {
			t.Errorf("joinMsg(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestBatchLimits(t *testing.T) {
	batch := func(n int) []string { return make([]string, n) }
	tests := []struct {
		name    string
		batches [][]string
		window  int
		scope   string
		want    []int
	}{
		{"one batch", [][]string{batch(3)}, 7, registry.ScopePerCall, []int{7}},
		{"shared per call", [][]string{batch(20), batch(20), batch(5)}, 45, registry.ScopePerCall, []int{20, 20, 5}},
		{"shared with remainder", [][]string{batch(2), batch(1)}, 10, registry.ScopePerCall, []int{7, 3}},
		{"per input keeps the window", [][]string{batch(2), batch(1)}, 4, registry.ScopePerInput, []int{4, 4}},
		{"no limit", [][]string{batch(2), batch(1)}, 0, registry.ScopePerCall, []int{0, 0}},
	}
	for _, tt := range tests {
		got := batchLimits(tt.batches, tt.window, tt.scope)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: batchLimits = %v, want %v", tt.name, got, tt.want)
		}
		if tt.scope == registry.ScopePerCall && tt.window > 0 {
			sum := 0
			for _, n := range got {
				sum += n
			}
			if sum != tt.window {
				t.Errorf("%s: shares sum to %d, want the window %d", tt.name, sum, tt.window)
			}
		}
	}
}

func TestApplyLimitPages(t *testing.T) {
	recs := func(prefix string, n int) []json.RawMessage {
		var out []json.RawMessage
		for i := range n {
			out = append(out, json.RawMessage(fmt.Sprintf(`"%s%d"`, prefix, i)))
		}
		return out
	}
	tests := []struct {
		name        string
		perInput    [][]json.RawMessage
		limit, skip int
		scope       string
		want        string
		total       int
		more        bool
	}{
		{"per call first page", [][]json.RawMessage{recs("a", 3), recs("b", 3)}, 4, 0, registry.ScopePerCall, `["a0","a1","a2","b0"]`, 6, true},
		{"per call second page", [][]json.RawMessage{recs("a", 3), recs("b", 3)}, 4, 4, registry.ScopePerCall, `["b1","b2"]`, 6, false},
		{"per input first page", [][]json.RawMessage{recs("a", 3), recs("b", 1)}, 2, 0, registry.ScopePerInput, `["a0","a1","b0"]`, 4, true},
		{"per input second page", [][]json.RawMessage{recs("a", 4), recs("b", 1)}, 2, 2, registry.ScopePerInput, `["a2","a3"]`, 5, true},
		{"per input past the end", [][]json.RawMessage{recs("a", 1)}, 2, 2, registry.ScopePerInput, `[]`, 1, false},
		{"no limit", [][]json.RawMessage{recs("a", 2)}, 0, 0, registry.ScopePerCall, `["a0","a1"]`, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total, more := applyLimit(tt.perInput, tt.limit, tt.skip, tt.scope)
			b, _ := json.Marshal(got)
			if string(b) != tt.want || total != tt.total || more != tt.more {
				t.Errorf("got %s total %d more %v, want %s %d %v", b, total, more, tt.want, tt.total, tt.more)
			}
		})
	}
}

// TestBatchPanicFailsOver: a client that panics fails its attempt
// (internal_error) and the walk moves on; the process lives, whether the
// batch ran on a goroutine of its own or inline on the caller's.
func TestBatchPanicFailsOver(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	panics := func(context.Context, sources.Call) (*sources.Result, error) { panic("client bug") }
	tests := []struct {
		name   string
		client sources.Client
		inputs int
	}{
		{"batches on goroutines", &fake{do: panics}, 3},
		{"lone batch inline", boundFake{&fake{do: panics}}, 1},
	}
	for _, tt := range tests {
		r := New(Config{}, map[string]sources.Client{"source_a": tt.client, "source_b": &fake{}}, NewBreakers(), nil)
		res, err := r.Run(context.Background(), Request{Service: svc, Inputs: urls(tt.inputs), Limit: 10})
		if err != nil {
			t.Fatalf("%s: Run: %v", tt.name, err)
		}
		if got := outcomes(res.Attempts); !reflect.DeepEqual(got, []string{headID + ":internal_error", secondID + ":ok"}) {
			t.Errorf("%s: attempts %v", tt.name, got)
		}
	}
}
