package dashboard

import (
	"context"
	"errors"
	"runtime"
	"time"
)

// gate bounds the anonymous password-form posts (sign-in, invitation)
// worked on at once, up to their hash: parsing the form, counting the
// attempt, looking the email or the token up. That work is microseconds
// of a core, but a flood of such posts on many connections kept as many
// goroutines runnable as it had connections, and every /v1 call waited
// its turn behind them at each step. Posts past the gate wait blocked
// (costing no CPU) up to wait, then are shed with 503. The hash that may
// follow runs outside the gate, bounded by the hash pool.
type gate struct {
	slots chan struct{}
	wait  time.Duration
}

// errGateBusy: the gate stayed full for its whole wait.
var errGateBusy = errors.New("sign-in posts are busy")

// gateWait is how long a post waits for the gate before its 503.
const gateWait = time.Second

func newGate(n int, wait time.Duration) *gate {
	return &gate{slots: make(chan struct{}, max(n, 1)), wait: wait}
}

// defaultGate is one slot per core: the work inside takes a core while
// it runs and waits on nothing but the store.
func defaultGate() *gate { return newGate(runtime.GOMAXPROCS(0), gateWait) }

// enter takes a slot, waiting up to the gate's wait; leave gives it back
// and may be called more than once.
func (g *gate) enter(ctx context.Context) (leave func(), err error) {
	select {
	case g.slots <- struct{}{}:
	default:
		t := time.NewTimer(g.wait)
		defer t.Stop()
		select {
		case g.slots <- struct{}{}:
		case <-t.C:
			return nil, errGateBusy
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	left := false
	return func() {
		if !left {
			left = true
			<-g.slots
		}
	}, nil
}
