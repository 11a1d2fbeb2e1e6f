package badger

import (
	"context"
	"testing"
	"time"
)

// acmeStore is a store without fsync holding account acme with 10 µ-credits.
func acmeStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateAccount(context.Background(), "acme", 10, time.Now()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCommitPanicFailsTheBatchOnly: a write whose apply panics fails with
// an error, and the write queue is not left busy: the next writes commit.
func TestCommitPanicFailsTheBatchOnly(t *testing.T) {
	s := acmeStore(t)
	ctx := context.Background()
	err := s.write(ctx, &writeReq{account: "acme", apply: func(b *batch) (error, error) { panic("boom") }})
	if err == nil {
		t.Fatal("a panicking write succeeded")
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.AddCredits(ctx, "acme", 5)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write after the panic: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write queue is stuck after a panic")
	}
	if a, err := s.GetAccount(ctx, "acme"); err != nil || a.Balance != 15 {
		t.Errorf("balance %v, %v; want 15", a.Balance, err)
	}
}

// TestGatherJoinsWritesStillArriving: once a batch carried several
// writes, the next leader waits for writes still arriving (gather) and
// commits them in its transaction; a lone writer never waits.
func TestGatherJoinsWritesStillArriving(t *testing.T) {
	s := acmeStore(t)
	ctx := context.Background()
	// A long gap: a leader that gathers with nothing arriving is seen.
	s.settles.mu.Lock()
	s.settles.gap, s.settles.most = 2*time.Second, 20*time.Second
	s.settles.mu.Unlock()

	start := time.Now()
	for range 2 {
		if _, err := s.AddCredits(ctx, "acme", 1); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d >= 2*time.Second {
		t.Fatalf("two lone writes took %v: a lone writer waited", d)
	}

	// write queues a write; its apply, when running is set, says so and
	// waits for release.
	write := func(running, release chan struct{}) chan error {
		done := make(chan error, 1)
		go func() {
			done <- s.write(ctx, &writeReq{account: "acme", apply: func(b *batch) (error, error) {
				if running != nil {
					running <- struct{}{}
					<-release
				}
				return nil, nil
			}})
		}()
		return done
	}
	queued := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			s.settles.mu.Lock()
			q, g := len(s.settles.queue), s.settles.gathering
			s.settles.mu.Unlock()
			if q >= n && (n > 0 || g) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d writes never queued", n)
			}
		}
	}
	wait := func(done ...chan error) {
		t.Helper()
		for _, d := range done {
			if err := <-d; err != nil {
				t.Fatal(err)
			}
		}
	}

	// A commits alone, holding the queue while B and C arrive; B and C
	// then commit together, holding it while D arrives.
	runA, relA, runB, relB := make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 2), make(chan struct{})
	a := write(runA, relA)
	<-runA
	b, c := write(runB, relB), write(nil, nil)
	queued(2)
	close(relA)
	wait(a)
	<-runB
	d := write(nil, nil)
	queued(1)
	close(relB)
	wait(b, c)
	// D leads after a batch of two: it gathers (queued(0) waits for
	// that), and E, arriving while it does, joins its transaction.
	queued(0)
	t0, w0 := s.Batches()
	e := write(nil, nil)
	wait(d, e)
	if t1, w1 := s.Batches(); t1-t0 != 1 || w1-w0 != 2 {
		t.Errorf("D and E: %d transactions carrying %d writes; want 1 carrying 2", t1-t0, w1-w0)
	}
}
