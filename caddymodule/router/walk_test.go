package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

// hooks records what a walk asked Request.Proceed and told
// Request.OnAttempt, and stops the walk at the offer named.
type hooks struct {
	stopAsked, stopTold string // offer ids; "" stops nowhere
	err                 error

	mu    sync.Mutex
	asked []string
	told  []string
}

func (h *hooks) proceed(_ context.Context, o *registry.Offer) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, o.ID)
	if o.ID == h.stopAsked {
		return h.err
	}
	return nil
}

func (h *hooks) onAttempt(_ context.Context, b Begun) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.told = append(h.told, fmt.Sprintf("%s:%d unpayable=%v", b.Offer.ID, b.Records, b.Unpayable))
	if b.Offer.ID == h.stopTold {
		return h.err
	}
	return nil
}

// TestWalkProgressAndCancel: the walk asks Proceed before each offer's
// money is held and tells OnAttempt once it is, apart from the Budget; an
// error from either ends the walk there, the offer not called (and, from
// Proceed, not even paid for), the failure carrying the error.
func TestWalkProgressAndCancel(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	errStop := errors.New("run cancelled")
	down := fail(&sources.Error{Outcome: sources.OutcomeRunFailed, Retryable: true}) // failed over, not retried
	tests := []struct {
		name        string
		h           *hooks
		covers      map[string]int
		wantAsked   []string
		wantTold    []string
		wantBudget  []string
		wantCalls   [2]int // head, second
		wantStopped bool
	}{
		{name: "failover told, nothing stopped", h: &hooks{},
			wantAsked: []string{headID, secondID}, wantTold: []string{headID + ":4 unpayable=false", secondID + ":4 unpayable=false"},
			wantBudget: []string{headID + ":4/1", secondID + ":4/1"}, wantCalls: [2]int{1, 1}},
		{name: "unpayable offer told", h: &hooks{}, covers: map[string]int{headID: 0},
			wantAsked: []string{headID, secondID}, wantTold: []string{headID + ":0 unpayable=true", secondID + ":4 unpayable=false"},
			wantBudget: []string{headID + ":4/1", secondID + ":4/1"}, wantCalls: [2]int{0, 1}},
		{name: "cancelled before the failover's money", h: &hooks{stopAsked: secondID, err: errStop},
			wantAsked: []string{headID, secondID}, wantTold: []string{headID + ":4 unpayable=false"},
			wantBudget: []string{headID + ":4/1"}, wantCalls: [2]int{1, 0}, wantStopped: true},
		{name: "stopped once the money is held", h: &hooks{stopTold: headID, err: errStop},
			wantAsked: []string{headID}, wantTold: []string{headID + ":4 unpayable=false"},
			wantBudget: []string{headID + ":4/1"}, wantCalls: [2]int{0, 0}, wantStopped: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := &fake{do: down}, &fake{do: echo(1)}
			r := setup(t, Config{}, a, b)
			bud := &tableBudget{covers: tt.covers}
			_, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Limit: 4,
				Budget: bud, Proceed: tt.h.proceed, OnAttempt: tt.h.onAttempt})
			if got := (err != nil && errors.Is(err, errStop)); got != tt.wantStopped {
				t.Fatalf("Run error %v, want stopped by the hook: %v", err, tt.wantStopped)
			}
			if tt.wantStopped {
				if f := asFailure(t, err); f.Kind != errkind.ClientClosed {
					t.Errorf("failure kind %v, want %v", f.Kind, errkind.ClientClosed)
				}
			}
			if !slices.Equal(tt.h.asked, tt.wantAsked) {
				t.Errorf("Proceed asked for %v, want %v", tt.h.asked, tt.wantAsked)
			}
			if !slices.Equal(tt.h.told, tt.wantTold) {
				t.Errorf("OnAttempt told %v, want %v", tt.h.told, tt.wantTold)
			}
			if !slices.Equal(bud.asked, tt.wantBudget) {
				t.Errorf("Budget asked %v, want %v", bud.asked, tt.wantBudget)
			}
			if got := [2]int{len(a.Calls()), len(b.Calls())}; got != tt.wantCalls {
				t.Errorf("upstream calls (head, second) %v, want %v", got, tt.wantCalls)
			}
		})
	}
}
