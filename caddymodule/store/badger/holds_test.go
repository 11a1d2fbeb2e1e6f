package badger

import (
	"context"
	"testing"
	"time"
)

// TestHoldsDoNotWaitForCommit: while a batch that captures holds commits
// (it holds holds.mu through its fsyncs), a call reading its own hold or
// releasing one already captured returns at once; a call releasing a hold
// it still has waits for the commit, so the sums stay exact.
func TestHoldsDoNotWaitForCommit(t *testing.T) {
	tests := []struct {
		name      string
		held      bool // the call still has its hold
		wantBlock bool
	}{
		{name: "captured: release returns at once", held: false, wantBlock: false},
		{name: "open hold: release waits for the commit", held: true, wantBlock: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{holds: newHolds()}
			if tc.held {
				s.holds.mu.Lock()
				s.holds.set("call1", heldMoney{account: "acct", key: "key1", amount: 5})
				s.holds.mu.Unlock()
			}
			s.holds.mu.Lock() // a commit in flight
			if amount, ok := s.holds.amount("call1"); ok != tc.held || (ok && amount != 5) {
				t.Fatalf("amount = %v, %v; want held %v", amount, ok, tc.held)
			}
			done := make(chan struct{})
			go func() {
				s.Release(context.Background(), "call1")
				close(done)
			}()
			select {
			case <-done:
				if tc.wantBlock {
					t.Fatal("Release of an open hold did not wait for the commit in flight")
				}
			case <-time.After(100 * time.Millisecond):
				if !tc.wantBlock {
					t.Fatal("Release of a captured hold waited for the commit in flight")
				}
			}
			s.holds.mu.Unlock()
			<-done
			if _, ok := s.holds.amount("call1"); ok || len(s.holds.account) != 0 || len(s.holds.key) != 0 {
				t.Errorf("after Release: byID %v, account sums %v, key sums %v; want none", s.holds.byID, s.holds.account, s.holds.key)
			}
		})
	}
}
