package router

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

// tableBudget covers, per offer, at most covers[offer] records (absent:
// everything asked) and records what it was asked.
type tableBudget struct {
	covers  map[string]int
	err     error
	refusal error

	mu    sync.Mutex
	asked []string // "<offer>:<records>"
}

func (b *tableBudget) Reserve(_ context.Context, o *registry.Offer, records, least int) (int, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, fmt.Sprintf("%s:%d/%d", o.ID, records, least))
	if b.err != nil {
		return 0, "", b.err
	}
	if n, ok := b.covers[o.ID]; ok {
		return min(n, records), "skipped: the balance pays for no record", nil
	}
	return records, "", nil
}

func (b *tableBudget) Refusal() error { return b.refusal }

func (b *tableBudget) Keep(o *registry.Offer, records int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, fmt.Sprintf("keep %s:%d", o.ID, records))
}

// asked sums the records the upstream calls of a fake asked for: the
// limit of each call, or its inputs when it has none.
func askedRecords(calls []sources.Call) (records, inputs int) {
	for _, c := range calls {
		n := len(bodyInputs(c.Body))
		inputs += n
		if c.Limit > 0 {
			records += c.Limit
		} else {
			records += n
		}
	}
	return records, inputs
}

func urls(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("https://example.com/in/u%d", i)
	}
	return out
}

// TestBudgetCapsUpstream: the upstream is never asked for more records
// than the Budget covered, per call and per input, failover included.
func TestBudgetCapsUpstream(t *testing.T) {
	reg := testRegistry(t)
	tests := []struct {
		name    string
		svc     string
		inputs  int
		limit   int
		skip    int // records of earlier pages (search cursors)
		covers  map[string]int
		headErr bool
		// want: records the serving offer's calls ask for at most, its
		// inputs, and the records served.
		wantAsked, wantInputs, wantRecords int
		wantAttempts                       []string
	}{
		{"per call, balance for 3 of 10", "pro_net/profile.info", 5, 10, 0, map[string]int{headID: 3}, false, 3, 3, 3,
			[]string{headID + ":ok"}},
		{"per call limit 1 of 30 inputs, funded", "pro_net/profile.info", 30, 1, 0, nil, false, 1, 1, 1,
			[]string{headID + ":ok"}},
		{"per call, head unpayable", "pro_net/profile.info", 4, 10, 0, map[string]int{headID: 0, secondID: 2}, false, 2, 2, 2,
			[]string{headID + ":unpayable", secondID + ":ok"}},
		{"failover gets the second offer's cover", "pro_net/profile.info", 4, 10, 0, map[string]int{headID: 4, secondID: 1}, true, 1, 1, 1,
			[]string{headID + ":upstream_5xx", secondID + ":ok"}},
		{"per input, 5 of 3x4", "pro_net/post.list", 3, 4, 0, map[string]int{"source_a/actor_2": 5}, false, 4, 1, 4,
			[]string{"source_a/actor_2:ok"}},
		{"per input, 2 of 3x4", "pro_net/post.list", 3, 4, 0, map[string]int{"source_a/actor_2": 2}, false, 2, 1, 2,
			[]string{"source_a/actor_2:ok"}},
		{"per input page 2, funded", "pro_net/post.list", 2, 3, 3, nil, false, 12, 2, 6,
			[]string{"source_a/actor_2:ok"}},
		{"per input page 2, 7 of 2x6", "pro_net/post.list", 2, 3, 3, map[string]int{"source_a/actor_2": 7}, false, 6, 1, 3,
			[]string{"source_a/actor_2:ok"}},
		{"per input page 2, 5 of 2x6", "pro_net/post.list", 2, 3, 3, map[string]int{"source_a/actor_2": 5}, false, 5, 1, 2,
			[]string{"source_a/actor_2:ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := service(t, reg, tt.svc)
			a := &fake{do: echo(6)}
			if tt.headErr {
				a.do = fail(&sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 503, Retryable: true})
			}
			b := &fake{do: echo(6)}
			bud := &tableBudget{covers: tt.covers}
			r := setup(t, Config{}, a, b)
			res, err := r.Run(context.Background(), Request{Service: svc, Inputs: urls(tt.inputs), Limit: tt.limit, Skip: tt.skip, Budget: bud})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := outcomes(res.Attempts); !reflect.DeepEqual(got, tt.wantAttempts) {
				t.Errorf("attempts %v, want %v", got, tt.wantAttempts)
			}
			serving := a
			if res.Offer.Source.ID == "source_b" {
				serving = b
			}
			asked, inputs := askedRecords(serving.Calls())
			if asked > tt.wantAsked || inputs != tt.wantInputs {
				t.Errorf("upstream asked for %d records of %d inputs, want at most %d of %d (calls %+v)", asked, inputs, tt.wantAsked, tt.wantInputs, serving.Calls())
			}
			if len(res.Records) != tt.wantRecords {
				t.Errorf("%d records served, want %d", len(res.Records), tt.wantRecords)
			}
			if n, ok := tt.covers[headID]; ok && n == 0 && len(a.Calls()) != 0 {
				t.Errorf("unpayable head was called %d times", len(a.Calls()))
			}
		})
	}
}

// TestBudgetRefusal: no offer payable → the Budget's refusal, before any
// upstream call; a Budget error → 503, no upstream call either.
func TestBudgetRefusal(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	refusal := &Failure{Kind: errkind.InsufficientCredits, Message: "no money"}
	tests := []struct {
		name     string
		bud      *tableBudget
		pin      bool
		skip     int
		wantKind errkind.Kind
	}{
		{"every offer unpayable", &tableBudget{covers: map[string]int{headID: 0, secondID: 0}, refusal: refusal}, false, 0, errkind.InsufficientCredits},
		{"pinned offer unpayable", &tableBudget{covers: map[string]int{headID: 0}, refusal: refusal}, true, 0, errkind.InsufficientCredits},
		{"refusal without a Failure", &tableBudget{covers: map[string]int{headID: 0, secondID: 0}, refusal: errors.New("plain")}, false, 0, errkind.InsufficientCredits},
		{"later page: money for the earlier pages only", &tableBudget{covers: map[string]int{headID: 10, secondID: 10}, refusal: refusal}, false, 10, errkind.InsufficientCredits},
		{"store down", &tableBudget{err: errors.New("connection refused")}, false, 0, errkind.StoreUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := &fake{}, &fake{}
			r := setup(t, Config{}, a, b)
			req := Request{Service: svc, Inputs: urls(2), Limit: 10, Skip: tt.skip, Budget: tt.bud}
			if tt.pin {
				req.Pin = offer(t, svc, headID)
			}
			_, err := r.Run(context.Background(), req)
			f := asFailure(t, err)
			if f.Kind != tt.wantKind {
				t.Errorf("failure %v, want %v", f.Kind, tt.wantKind)
			}
			if n := len(a.Calls()) + len(b.Calls()); n != 0 {
				t.Errorf("%d upstream calls, want none", n)
			}
		})
	}
}
