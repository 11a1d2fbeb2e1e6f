// Package bufpool reuses the byte buffers of the extract path: upstream
// bodies, stored run documents and answers are tens of KB each and dead as
// soon as the call is done, and allocating them fresh made the garbage
// collector a leading cost under load.
package bufpool

import "sync"

// minCap is the capacity of a new buffer: a typical run document or body
// fits, so most buffers are never grown.
const minCap = 64 << 10

// maxCap is the largest buffer kept: a pool holding a buffer one huge run
// grew would keep that memory for every later call.
const maxCap = 1 << 20

// Pool is a pool of byte buffers; the zero value is ready to use.
type Pool struct{ p sync.Pool }

// Get returns an empty buffer with room for at least n bytes.
func (p *Pool) Get(n int) *[]byte {
	if b, _ := p.p.Get().(*[]byte); b != nil {
		if cap(*b) >= n {
			return b
		}
		p.p.Put(b)
	}
	b := make([]byte, 0, max(n, minCap))
	return &b
}

// Put hands b back for reuse, emptied, unless it grew beyond maxCap. Only
// call it once nothing reads b's bytes any more.
func (p *Pool) Put(b *[]byte) {
	if b != nil && cap(*b) <= maxCap {
		*b = (*b)[:0]
		p.p.Put(b)
	}
}
