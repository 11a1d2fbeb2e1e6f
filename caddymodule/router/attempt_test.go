package router

import (
	"bytes"
	"context"
	"reflect"
	"runtime"
	"testing"

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
// their own. A panic inline still fails only the attempt.
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

	t.Run("panic inline", func(t *testing.T) {
		a := boundFake{&fake{do: func(context.Context, sources.Call) (*sources.Result, error) { panic("client bug") }}}
		r := New(Config{}, map[string]sources.Client{"source_a": a, "source_b": &fake{}}, NewBreakers(), nil)
		res, err := r.Run(context.Background(), Request{Service: svc, Inputs: urls(1), Limit: 10})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := outcomes(res.Attempts); !reflect.DeepEqual(got, []string{headID + ":internal_error", secondID + ":ok"}) {
			t.Errorf("attempts %v", got)
		}
	})
}
