// Package bufpool reuses the byte buffers of the extract path: upstream
// bodies, stored run documents and answers are tens of KB each and dead as
// soon as the call is done, and allocating them fresh made the garbage
// collector a leading cost under load.
package bufpool

import "sync"

// classes are the capacities of new buffers, smallest first. A buffer is
// made as small as the class that fits what the caller expects: when
// thousands of held calls are answered at once, each holds an upstream
// body, a run document and an answer until its settle commits, and a
// one-size 64 KiB buffer for each of a 3 KB N = 1 call made the gateway's
// peak resident set the calls' buffers rather than its work.
var classes = [...]int{4 << 10, 16 << 10, 64 << 10, 256 << 10, maxCap}

// maxCap is the largest buffer kept: a pool holding a buffer one huge run
// grew would keep that memory for every later call.
const maxCap = 1 << 20

// Pool is a pool of byte buffers in size classes; the zero value is ready
// to use.
type Pool struct{ p [len(classes)]sync.Pool }

// Get returns an empty buffer with room for at least n bytes: a free one
// of the smallest class that holds n, else of a larger class, else a new
// one of the smallest class that holds n. Pass what the buffer is expected
// to hold (0 when unknown: the buffer grows as appended to, and goes back
// to the class it grew to).
func (p *Pool) Get(n int) *[]byte {
	first := len(classes) - 1
	for c, size := range classes {
		if size >= n {
			first = c
			break
		}
	}
	for c := first; c < len(classes); c++ {
		if b, _ := p.p[c].Get().(*[]byte); b != nil {
			if cap(*b) >= n {
				return b
			}
			p.p[c].Put(b)
		}
	}
	b := make([]byte, 0, max(n, classes[first]))
	return &b
}

// Put hands b back for reuse, emptied, in the largest class its capacity
// covers, unless it grew beyond maxCap. Only call it once nothing reads
// b's bytes any more.
func (p *Pool) Put(b *[]byte) {
	if b == nil || cap(*b) > maxCap {
		return
	}
	*b = (*b)[:0]
	c := 0
	for i, size := range classes {
		if cap(*b) >= size {
			c = i
		}
	}
	p.p[c].Put(b)
}
