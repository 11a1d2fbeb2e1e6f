package sources

import (
	"context"
	"fmt"
	"testing"
	"time"

	"socialrouter/cmd/upstream-sim/sim"
)

// TestLeftRunningNotAborted: a call whose context ends with
// ErrLeftRunning as its cause stops waiting and leaves the work running
// for the waiter it is handed to; any other cause aborts it. Both
// protocols.
func TestLeftRunningNotAborted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cause   error
		aborted bool
	}{
		{name: "cancelled", cause: context.Canceled, aborted: true},
		{name: "handed over", cause: fmt.Errorf("%w: the worker stops", ErrLeftRunning)},
	} {
		for _, proto := range []string{ProtocolActorRun, ProtocolDatasetScrape} {
			t.Run(tc.name+"/"+proto, func(t *testing.T) {
				s, url := startSim(t, 0.01)
				var c Client
				call := Call{Target: actorTarget, Body: map[string]any{}}
				if proto == ProtocolActorRun {
					_ = s.SetFault(sim.Fault{Target: actorTarget, KeepRunning: true})
					c, _ = NewActorRun(Config{BaseURL: url})
				} else {
					_ = s.SetFault(sim.Fault{Target: companyTarget, KeepRunning: true})
					c, _ = NewDatasetScrape(Config{BaseURL: url, PollInterval: 5 * time.Millisecond})
					call = Call{Target: companyTarget, Params: map[string]string{"type": "discover_new"},
						Body: map[string]any{"input": []any{map[string]any{"url": "u"}}}}
				}
				ctx, cancel := context.WithCancelCause(context.Background())
				call.OnHandle = func(Handle) { time.AfterFunc(30*time.Millisecond, func() { cancel(tc.cause) }) }
				if _, err := c.Do(ctx, call); err == nil {
					t.Fatal("the call returned no error after its context ended")
				}
				if en := onlyEntry(t, s); en.Aborted != tc.aborted || en.Running == tc.aborted {
					t.Errorf("ledger %+v, want aborted %v", en, tc.aborted)
				}
			})
		}
	}
}
