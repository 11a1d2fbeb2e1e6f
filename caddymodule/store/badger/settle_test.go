package badger

import (
	"context"
	"testing"
	"time"
)

// TestCommitPanicFailsTheBatchOnly: a write whose apply panics fails with
// an error, and the write queue is not left busy: the next writes commit.
func TestCommitPanicFailsTheBatchOnly(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.CreateAccount(ctx, "acme", 10, time.Now()); err != nil {
		t.Fatal(err)
	}
	err = s.write(ctx, &writeReq{account: "acme", apply: func(b *batch) (error, error) { panic("boom") }})
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
