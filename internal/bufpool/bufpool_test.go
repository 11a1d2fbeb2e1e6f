package bufpool

import "testing"

// TestPool checks Get's capacity promise and that Put keeps ordinary
// buffers (emptied) but drops one grown past maxCap.
func TestPool(t *testing.T) {
	var p Pool
	for _, n := range []int{0, 10, classes[2] + 1, maxCap + 1} {
		b := p.Get(n)
		if len(*b) != 0 || cap(*b) < n {
			t.Errorf("Get(%d): len %d cap %d", n, len(*b), cap(*b))
		}
		*b = append(*b, "data"...)
		p.Put(b)
		if cap(*b) <= maxCap && len(*b) != 0 {
			t.Errorf("Put left %d bytes in a kept buffer", len(*b))
		}
		if cap(*b) > maxCap && len(*b) == 0 {
			t.Error("Put emptied a buffer it does not keep")
		}
	}
	p.Put(nil) // harmless
}

// TestClasses: a new buffer is as small as the class that fits the size
// asked, and a buffer handed back serves a later Get of any size it holds
// from its class or a smaller one.
func TestClasses(t *testing.T) {
	for _, c := range []struct{ n, cap int }{
		{0, 4 << 10}, {3400, 4 << 10}, {4 << 10, 4 << 10}, {4<<10 + 1, 16 << 10}, {30 << 10, 64 << 10}, {300 << 10, maxCap},
	} {
		var p Pool
		if b := p.Get(c.n); cap(*b) != c.cap {
			t.Errorf("Get(%d) on an empty pool: cap %d, want %d", c.n, cap(*b), c.cap)
		}
	}
	// sync.Pool may drop what is put (always at a GC, at random under the
	// race detector): a miss gives a new buffer of the class asked, and
	// one of 20 tries must reuse.
	for _, n := range []int{0, 8 << 10} {
		var p Pool
		reused := false
		for range 20 {
			grown := make([]byte, 0, 32<<10) // as a Get(0) buffer grown by appends
			p.Put(&grown)
			switch b := p.Get(n); cap(*b) {
			case 32 << 10:
				reused = true
			case 4 << 10, 16 << 10:
			default:
				t.Errorf("Get(%d) after a 32 KiB buffer was put: cap %d", n, cap(*b))
			}
		}
		if !reused {
			t.Errorf("Get(%d) never reused the 32 KiB buffer put before it", n)
		}
	}
}
