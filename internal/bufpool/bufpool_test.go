package bufpool

import "testing"

// TestPool checks Get's capacity promise and that Put keeps ordinary
// buffers (emptied) but drops one grown past maxCap.
func TestPool(t *testing.T) {
	var p Pool
	for _, n := range []int{0, 10, minCap + 1, maxCap + 1} {
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
