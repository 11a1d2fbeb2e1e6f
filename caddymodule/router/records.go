package router

import (
	"encoding/json"

	"socialrouter/internal/bufpool"
)

// scratchBufs holds the buffers a batch's records are normalized into
// before they are kept: reused between batches, never handed out.
var scratchBufs bufpool.Pool

// recordSpan is a kept record: bytes [start, end) of the scratch
// buffer, of the batch's input k.
type recordSpan struct{ k, start, end int }

// records collects a checked batch's records: each is written straight
// into one pooled scratch buffer (Program.AppendCheckedItem), and once the
// batch is read they are copied, all at once, into one allocation of
// exactly their size. Sizing that allocation up front from the items'
// bytes held about twice the records (a record drops most of its item),
// and was two thirds of the bytes a call allocated.
type records struct {
	buf   *[]byte
	spans []recordSpan
}

func newRecords() *records {
	return &records{buf: scratchBufs.Get(0)}
}

// at is where the next record begins.
func (r *records) at() int { return len(*r.buf) }

// record is the record written since start.
func (r *records) record(start int) []byte {
	b := *r.buf
	return b[start:len(b):len(b)]
}

// keep keeps the record written since start as input k's; drop forgets it.
func (r *records) keep(k, start int) {
	r.spans = append(r.spans, recordSpan{k, start, len(*r.buf)})
}

func (r *records) drop(start int) { *r.buf = (*r.buf)[:start] }

// place appends the kept records, in the order kept, to their inputs'
// lists, as slices of one fresh copy of their bytes, and gives the
// scratch buffer back: r is not used afterwards.
func (r *records) place(perInput [][]json.RawMessage) {
	if len(r.spans) > 0 {
		own := append([]byte(nil), *r.buf...)
		for _, s := range r.spans {
			perInput[s.k] = append(perInput[s.k], own[s.start:s.end:s.end])
		}
	}
	r.release()
}

// release gives the scratch buffer back without placing anything.
func (r *records) release() {
	if r.buf != nil {
		scratchBufs.Put(r.buf)
		r.buf = nil
	}
}
