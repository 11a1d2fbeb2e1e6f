package router

import (
	"testing"
	"time"
)

// TestWatchdogQuietPerBatch: a batch's announced wait ends with its own
// activity, not with another batch's.
func TestWatchdogQuietPerBatch(t *testing.T) {
	w := newWatchdog(50*time.Millisecond, 2, func(error) {})
	defer w.stop()
	act0, wait0, act1 := w.pulses[0].activity, w.pulses[0].waiting, w.pulses[1].activity
	wait0(time.Hour)
	time.Sleep(60 * time.Millisecond)
	act1()
	time.Sleep(60 * time.Millisecond)
	if w.idle() > 0 {
		t.Fatalf("idle %v during batch 0's announced wait", w.idle())
	}
	act0() // batch 0's answer began: its silence counts from here
	time.Sleep(60 * time.Millisecond)
	if w.idle() < 50*time.Millisecond {
		t.Errorf("idle %v after batch 0 heard back, want its silence counted", w.idle())
	}
}
