package heappeak

import (
	"runtime"
	"testing"
	"time"
)

func TestSample(t *testing.T) {
	stop := Sample(time.Millisecond)
	buf := make([]byte, 8<<20)
	time.Sleep(10 * time.Millisecond)
	peak := stop()
	if peak < uint64(len(buf)) {
		t.Errorf("peak %d bytes, want at least the %d bytes held", peak, len(buf))
	}
	runtime.KeepAlive(buf)
}
