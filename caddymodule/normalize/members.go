package normalize

import (
	"slices"
	"unsafe"

	"socialrouter/internal/jsonscan"
)

// Member indexes: each raw object the plan reads a field of without a
// frame (a site's index) is scanned once per run, its members noted, and
// every later read of it, by a field or by pushFrame, looks them up there
// rather than scanning the object again (issue 38: the bench item's
// experience entry was scanned four times, for .positions, .end_date,
// .title and the entry's own frame).

// objIndex is the member index of one raw object of the item: mems[first:
// first+n], the object starting at start in the item.
type objIndex struct {
	start, first, n int32
}

// memSpan is one member: its key's body (between the quotes; esc when it
// holds an escape) and its value, as offsets in the item.
type memSpan struct {
	ks, ke, vs, ve int32
	esc            bool
}

// srcOffset is where raw starts in the item, or -1 when raw is not a view
// of it.
func (e *env) srcOffset(raw string) int {
	off := uintptr(unsafe.Pointer(unsafe.StringData(raw))) - uintptr(unsafe.Pointer(unsafe.StringData(e.src)))
	if off >= uintptr(len(e.src)) || int(off)+len(raw) > len(e.src) {
		return -1
	}
	return int(off)
}

// memberIndex is the member index of the raw object at offset off of the
// item, or nil when it has none: one is made at the second read of the
// same object in a row (a single read scans no further than its key).
func (e *env) memberIndex(raw string, off int) []memSpan {
	i, found := slices.BinarySearchFunc(e.objs, int32(off), cmpObj)
	if !found {
		if e.lastRead != int32(off) {
			e.lastRead = int32(off)
			return nil
		}
		e.indexMembers(raw, off)
		i, _ = slices.BinarySearchFunc(e.objs, int32(off), cmpObj)
	}
	o := e.objs[i]
	return e.mems[o.first : o.first+o.n]
}

func cmpObj(o objIndex, at int32) int { return int(o.start - at) }

// indexMembers notes the members of the object at the start of raw (which
// may go on after it), raw being at off in the item, and returns the index
// in raw after the object.
func (e *env) indexMembers(raw string, off int) int {
	first := len(e.mems)
	j := 1
	for {
		ks, ke, vs, esc, ok := memberAt(raw, j)
		if !ok {
			j = vs
			break
		}
		ve := jsonscan.SkipValue(raw, vs)
		e.mems = append(e.mems, memSpan{int32(off + ks), int32(off + ke), int32(off + vs), int32(off + ve), esc})
		j = ve
	}
	o := objIndex{int32(off), int32(first), int32(len(e.mems) - first)}
	if n := len(e.objs); n == 0 || e.objs[n-1].start < o.start {
		e.objs = append(e.objs, o)
	} else {
		i, _ := slices.BinarySearchFunc(e.objs, o.start, cmpObj)
		e.objs = slices.Insert(e.objs, i, o)
	}
	return j + 1
}

// indexRoot notes the item's own members as its checker located them (an
// object at the item's first byte), as indexMembers would have: the root
// frame then reads them (indexedFrame) instead of a pass over the item.
// Called first, on an empty index.
func (e *env) indexRoot(members []jsonscan.Member) {
	first := len(e.mems)
	for _, m := range members {
		e.mems = append(e.mems, memSpan{m.KeyStart, m.KeyEnd, m.ValueStart, m.ValueEnd, false})
	}
	e.objs = append(e.objs, objIndex{0, int32(first), int32(len(members))})
}

// memberAt reads the member of an object at raw[i] (just after '{' or
// after the previous member's value): its key's body raw[ks:ke], escapes
// undecoded (esc: it holds one), and where its value starts; ok is false
// at the closing '}', which is then at vs.
func memberAt(raw string, i int) (ks, ke, vs int, esc, ok bool) {
	i = jsonscan.SkipSpace(raw, i)
	if raw[i] == ',' {
		i = jsonscan.SkipSpace(raw, i+1)
	}
	if raw[i] != '"' {
		return 0, 0, i, false, false
	}
	end, esc := keyEnd(raw, i)
	return i + 1, end - 1, jsonscan.SkipSpace(raw, jsonscan.SkipSpace(raw, end)+1), esc, true // past ':'
}

// keyEnd is jsonscan.SkipString for a key, and whether the key holds an
// escape: one pass byte by byte, where keys are short enough that
// IndexByte's setup, twice (the end, then an escape), cost more (issue 38).
func keyEnd(raw string, i int) (int, bool) {
	esc := false
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			return i + 1, esc
		case '\\':
			esc = true
			i++
		}
	}
	return len(raw), esc
}

// key is the member's key, decoded.
func (e *env) key(m *memSpan) string {
	k := e.src[m.ks:m.ke]
	if m.esc {
		k = jsonscan.Unquote(k)
	}
	return k
}

// rawMember is key of the raw object raw, or null: through its member
// index when raw is a view of the item.
func (e *env) rawMember(raw, key string) value {
	off := e.srcOffset(raw)
	if off < 0 {
		return rawMember(raw, key)
	}
	ms := e.memberIndex(raw, off)
	if ms == nil {
		return rawMember(raw, key)
	}
	for i := range ms {
		m := &ms[i]
		if m.esc {
			if e.key(m) == key {
				return rawValue(e.src[m.vs:m.ve])
			}
		} else if int(m.ke-m.ks) == len(key) && e.src[m.ks:m.ke] == key {
			return rawValue(e.src[m.vs:m.ve])
		}
	}
	return vNull
}

// indexedFrame fills slots for site s from the member index of raw when
// raw has one, and reports whether it did.
func (e *env) indexedFrame(t *keyTable, raw string, slots []span) bool {
	off := e.srcOffset(raw)
	if off < 0 {
		return false
	}
	i, found := slices.BinarySearchFunc(e.objs, int32(off), cmpObj)
	if !found {
		return false
	}
	o := e.objs[i]
	ms := e.mems[o.first : o.first+o.n]
	for j := range ms {
		m := &ms[j]
		slot, ok := t.find(e.key(m))
		if !ok || slots[slot].end != 0 { // the first of a repeated key, as pushFrame's pass
			continue
		}
		slots[slot] = span{m.vs, m.ve}
		if e.src[m.vs] == '[' {
			// As pushFrame's own pass: note the array's elements.
			base := int(m.vs)
			e.skipArray(e.src[base:m.ve], 0, base)
		}
	}
	return true
}
