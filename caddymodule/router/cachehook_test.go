package router

import (
	"context"
	"slices"
	"strings"
	"testing"

	"socialrouter/caddymodule/sources"
)

// reversed answers like echo(n) with the items in reverse order, as an
// upstream that answers a batch in its own order.
func reversed(n int) func(context.Context, sources.Call) (*sources.Result, error) {
	return func(ctx context.Context, c sources.Call) (*sources.Result, error) {
		res, err := echo(n)(ctx, c)
		if res != nil {
			slices.Reverse(res.Items)
		}
		return res, err
	}
}

// TestRunInputs: each record is placed at the input its item answered,
// whatever order the upstream answered in, over several batches, and
// when a failed batch's inputs failed over to the next offer; the limit
// is applied as Run applies it.
func TestRunInputs(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	in := urls(5)
	busy := &sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 503, Retryable: true, Message: "busy"}
	tests := []struct {
		name  string
		a, b  func(context.Context, sources.Call) (*sources.Result, error)
		limit int
		want  int // records
	}{
		{name: "answers out of order, 3 batches", a: reversed(2), b: echo(1), want: 10},
		{name: "limit", a: reversed(2), b: echo(1), limit: 3, want: 3},
		{name: "a failed batch failed over", a: failBatchOf(in[2], busy), b: reversed(1), want: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := setup(t, Config{}, &fake{do: tc.a}, &fake{do: tc.b})
			res, inputs, err := r.RunInputs(context.Background(), &Request{Service: svc, Inputs: in, Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Records) != tc.want || len(inputs) != len(res.Records) {
				t.Fatalf("%d records, %d inputs; want %d", len(res.Records), len(inputs), tc.want)
			}
			for j, rec := range res.Records {
				name, _, _ := strings.Cut(field(t, rec, "name"), "#")
				if in[inputs[j]] != name {
					t.Errorf("record %d (%s) placed at input %d (%s)", j, name, inputs[j], in[inputs[j]])
				}
			}
		})
	}
}

// TestRunInputsUnnamed: an item of a batch of several inputs that names
// none of them is served (under the first input) but not placed: inputs
// is nil, so a caller keeping records input by input keeps none.
func TestRunInputsUnnamed(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	in := urls(4)
	unnamed := func(_ context.Context, c sources.Call) (*sources.Result, error) {
		res := &sources.Result{Status: 201, Handles: []string{"run_" + c.Target}}
		for i := range bodyInputs(c.Body) {
			res.Items = append(res.Items, rawf(`{"url": "https://example.com/in/elsewhere-%d", "name": "n%d"}`, i, i))
		}
		return res, nil
	}
	r := setup(t, Config{}, &fake{do: unnamed}, &fake{do: unnamed})
	res, inputs, err := r.RunInputs(context.Background(), &Request{Service: svc, Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != len(in) || inputs != nil {
		t.Errorf("%d records, inputs %v; want %d records, none placed", len(res.Records), inputs, len(in))
	}
}
