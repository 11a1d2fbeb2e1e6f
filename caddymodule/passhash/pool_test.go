package passhash

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHashAndVerify(t *testing.T) {
	p := New(1, time.Second)
	h, err := p.Hash(t.Context(), "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		hash, pw string
		ok       bool
	}{
		{h, "correct horse battery", true},
		{h, "correct horse batterY", false},
		{"$argon2id$v=19$m=4194304,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaA", "x", false}, // 4 GiB asked: refused unhashed
		{"not a hash", "x", false},
	} {
		if ok, err := p.Verify(t.Context(), c.hash, c.pw); err != nil || ok != c.ok {
			t.Errorf("Verify(%.30q, %q) = %v, %v; want %v", c.hash, c.pw, ok, err, c.ok)
		}
	}
}

// TestPoolBoundsHashesInFlight: however many callers, at most Slots
// hashes run at once, and a caller that finds no slot within the wait
// gets ErrBusy instead of queueing.
func TestPoolBoundsHashesInFlight(t *testing.T) {
	p := New(2, 5*time.Second)
	var peak atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				n := int64(p.InUse())
				for o := peak.Load(); n > o && !peak.CompareAndSwap(o, n); o = peak.Load() {
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Hash(t.Context(), "pw"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	if got := peak.Load(); got > 2 || got == 0 {
		t.Errorf("peak hashes in flight %d, want 1 or 2", got)
	}

	p.Configure(1, 50*time.Millisecond)
	release, err := p.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := p.Verify(t.Context(), "h", "pw"); !errors.Is(err, ErrBusy) {
		t.Errorf("Verify with no slot free: %v, want ErrBusy", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Errorf("gave up after %v, want the wait of 50ms", d)
	}
	release()
	if _, err := p.Verify(t.Context(), "h", "pw"); err != nil {
		t.Errorf("Verify after release: %v", err)
	}
}

// TestDefaultSlotsLeaveACore: on a machine of two cores or more the
// default pool never takes every core, so a flood of password checks
// leaves the paid API one; it always has at least one slot.
func TestDefaultSlotsLeaveACore(t *testing.T) {
	for _, procs := range []int{1, 2, 3, 4, 8} {
		prev := runtime.GOMAXPROCS(procs)
		got := defaultSlots()
		runtime.GOMAXPROCS(prev)
		if got < 1 || (procs >= 2 && got >= procs) {
			t.Errorf("GOMAXPROCS %d: %d default slots, want at least 1 and fewer than the cores", procs, got)
		}
	}
}
