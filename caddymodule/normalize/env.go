package normalize

import (
	"cmp"
	"slices"
	"sync/atomic"
	"unsafe"

	"socialrouter/internal/jsonscan"
)

// env is the per-run state: variables, indexed objects, scratch buffers
// and arenas. Pooled per plan.
type env struct {
	src    string
	vars   []value
	frames []frame
	free   [][]value
	vals   arena[value]
	comps  arena[comp]
	strs   arena[string]
	spans  []span
	// elemEnds holds the extent of elements of arrays that an indexing
	// pass skipped, sorted by start (skipArray, nextElem); elemHint is
	// where the next lookup likely hits.
	elemEnds []span
	elemHint int
	// objs (sorted by start) and mems are the member indexes of raw
	// objects read without a frame (members.go).
	objs     []objIndex
	mems     []memSpan
	lastRead int32 // the raw object of the last read without an index
	pairs    []pair
	out      []byte
	bytes    []byte
	strbuf   []byte
	check    jsonscan.Checker // the item's check, when the caller has not made it
}

// frame holds the indexed fields of one raw object (raw) for one site.
type frame struct {
	site  *site
	raw   string
	slots []span
}

// span locates a value in the item; end == 0 means absent.
type span struct{ start, end int32 }

type pair struct {
	key string
	val value
}

func (e *env) reset() {
	e.src = ""
	clear(e.vars)
	clear(e.frames) // they hold views of the caller's item
	e.frames = e.frames[:0]
	e.spans = e.spans[:0] // pushFrame zeroes the slots it takes
	e.elemEnds = e.elemEnds[:0]
	e.elemHint = 0
	e.objs = e.objs[:0]
	e.mems = e.mems[:0]
	e.lastRead = -1
	clear(e.pairs)
	e.pairs = e.pairs[:0]
	e.vals.reset()
	e.comps.reset()
	e.strs.reset()
	e.bytes = e.bytes[:0]
	e.strbuf = e.strbuf[:0]
}

// keep returns b as a string held by the run's string arena (valid until
// the env is reset; nothing built in a run outlives it).
func (e *env) keep(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(e.strbuf)-len(e.strbuf) < len(b) {
		e.strbuf = make([]byte, 0, max(4096, 2*len(b)))
	}
	start := len(e.strbuf)
	e.strbuf = append(e.strbuf, b...)
	return unsafe.String(&e.strbuf[start], len(b))
}

// concat is a + b in the string arena.
func (e *env) concat(parts ...string) string {
	b := e.bytes[:0]
	for _, p := range parts {
		b = append(b, p...)
	}
	e.bytes = b[:0]
	return e.keep(b)
}

func (e *env) getBuf() []value {
	if n := len(e.free); n > 0 {
		b := e.free[n-1]
		e.free = e.free[:n-1]
		return b
	}
	return make([]value, 0, 8)
}

func (e *env) putBuf(b []value) {
	clear(b)
	e.free = append(e.free, b[:0])
}

// newArr stores a copy of vs as a built array.
func (e *env) newArr(vs []value) value {
	c := &e.comps.alloc(1)[0]
	*c = comp{}
	if len(vs) > 0 {
		c.arr = e.vals.alloc(len(vs))
		copy(c.arr, vs)
	}
	return value{k: kArr, c: c}
}

// newObj stores a built object of n keys, to be filled by the caller.
func (e *env) newObj(n int, sorted bool) *comp {
	c := &e.comps.alloc(1)[0]
	*c = comp{keys: e.strs.alloc(n), vals: e.vals.alloc(n), sorted: sorted}
	return c
}

// newObjKeys is newObj for an object whose keys are a node's constant,
// sorted keys: shared, not copied (a built object's keys are written only
// while it is made, never after). Copying them per object was a bulk
// write barrier per object while the collector runs. quoted is
// quoteKeys(keys).
func (e *env) newObjKeys(keys, quoted []string) *comp {
	c := &e.comps.alloc(1)[0]
	*c = comp{keys: keys, quoted: quoted, vals: e.vals.alloc(len(keys)), sorted: true}
	return c
}

// arena hands out slices from reusable chunks. A slice handed out holds
// what an earlier run left there: every caller writes each element before
// anything reads it (newArr copies, newObj's callers fill every member,
// a comp is set whole). Reset does not clear the chunks, which was 3–4 %
// of a normalize (issue 38); what they still point at (views of earlier
// items, strings of the run's arena) is kept alive at most until the env
// is overwritten or dropped from its sync.Pool, which drops it within two
// collections.
type arena[T any] struct {
	chunks [][]T
	cur    int
}

const arenaChunk = 512

func (a *arena[T]) alloc(n int) []T {
	if n > arenaChunk/4 {
		return make([]T, n)
	}
	for {
		if a.cur < len(a.chunks) {
			c := a.chunks[a.cur]
			if l := len(c); cap(c)-l >= n {
				a.chunks[a.cur] = c[:l+n]
				return c[l : l+n : l+n]
			}
			a.cur++
			continue
		}
		a.chunks = append(a.chunks, make([]T, 0, arenaChunk))
	}
}

func (a *arena[T]) reset() {
	for i := 0; i < len(a.chunks) && i <= a.cur; i++ {
		a.chunks[i] = a.chunks[i][:0]
	}
	a.cur = 0
}

// site is a place where one input object is read by several constant
// field reads (.name); each key read gets a slot.
type site struct {
	keys  map[string]int
	reads int
	// table is keys for pushFrame, built at its first run (keys is
	// complete once the plan is compiled; racing builds make equal tables).
	table atomic.Pointer[keyTable]
}

func (s *site) slot(key string) int {
	s.reads++
	return s.index(key)
}

// index is key's slot, added uncounted: a key the plan itself reads (the
// error markers of the root) rather than the program.
func (s *site) index(key string) int {
	if i, ok := s.keys[key]; ok {
		return i
	}
	i := len(s.keys)
	s.keys[key] = i
	return i
}

// pushFrame indexes the raw object raw for site s: one pass over its
// members fills the slots of the keys s reads. The pass stops once every
// key is found: the plan only runs on checked JSON, whose objects repeat
// no key, so the rest of the object cannot hold a later value for one.
func (e *env) pushFrame(s *site, raw string) {
	start := len(e.spans)
	for range len(s.keys) {
		e.spans = append(e.spans, span{})
	}
	slots := e.spans[start:len(e.spans):len(e.spans)]
	base := int(uintptr(unsafe.Pointer(unsafe.StringData(raw))) - uintptr(unsafe.Pointer(unsafe.StringData(e.src))))
	t := s.table.Load()
	if t == nil {
		t = newKeyTable(s.keys)
		s.table.Store(t)
	}
	if e.indexedFrame(t, raw, slots) {
		e.frames = append(e.frames, frame{site: s, raw: raw, slots: slots})
		return
	}
	// jsonscan.NextMember, except that an array the site reads is skipped
	// element by element, its elements' ends noted for the plan's
	// iteration over it (elemEnds).
	i := 1
	for missing := len(slots); missing > 0; {
		ks, ke, vs, esc, ok := memberAt(raw, i)
		if !ok {
			break
		}
		k := raw[ks:ke]
		if esc {
			k = jsonscan.Unquote(k)
		}
		i = vs
		slot, found := t.find(k)
		var ve int
		if found && raw[i] == '[' {
			ve = e.skipArray(raw, i, base)
		} else {
			ve = jsonscan.SkipValue(raw, i)
		}
		if found {
			slots[slot] = span{int32(base + i), int32(base + ve)}
			missing--
		}
		i = ve
	}
	e.frames = append(e.frames, frame{site: s, raw: raw, slots: slots})
}

// skipArray returns the index after the array at raw[i], raw being at
// base in the item, and notes where its elements end in elemEnds, which
// stays sorted by start: an array before the last one noted (one nested
// in an element indexed after its parent was) is not noted.
func (e *env) skipArray(raw string, i, base int) int {
	note := len(e.elemEnds) == 0 || int(e.elemEnds[len(e.elemEnds)-1].start) < base+i
	for j := i + 1; ; {
		j = jsonscan.SkipSpace(raw, j)
		if raw[j] == ',' {
			j = jsonscan.SkipSpace(raw, j+1)
		}
		if raw[j] == ']' {
			return j + 1
		}
		var ve int
		if note && raw[j] == '{' {
			// An object element is indexed in the same pass (members.go):
			// the plan reads the elements of the arrays it reads.
			ve = j + e.indexMembers(raw[j:], base+j)
		} else {
			ve = jsonscan.SkipValue(raw, j)
		}
		if note {
			e.elemEnds = append(e.elemEnds, span{int32(base + j), int32(base + ve)})
		}
		j = ve
	}
}

// nextElem is jsonscan.NextElem over the raw array arr, where the
// element's end is taken from elemEnds when the indexing pass over arr's
// parent noted it: the element is then not skipped a second time.
func (e *env) nextElem(arr string, i int) (string, int, bool) {
	i = jsonscan.SkipSpace(arr, i)
	if arr[i] == ',' {
		i = jsonscan.SkipSpace(arr, i+1)
	}
	if arr[i] == ']' {
		return "", i, false
	}
	if ends := e.elemEnds; len(ends) > 0 {
		// arr is a view of the item (raw values are); were it not, off
		// would fall outside it and nothing would be looked up.
		off := uintptr(unsafe.Pointer(unsafe.StringData(arr))) - uintptr(unsafe.Pointer(unsafe.StringData(e.src)))
		if off < uintptr(len(e.src)) {
			at := int32(int(off) + i)
			h := e.elemHint
			if h >= len(ends) || ends[h].start != at {
				h, _ = slices.BinarySearchFunc(ends, at, func(sp span, at int32) int { return cmp.Compare(sp.start, at) })
			}
			if h < len(ends) && ends[h].start == at {
				e.elemHint = h + 1
				ve := int(ends[h].end) - int(off)
				return arr[i:ve], ve, true
			}
		}
	}
	ve := jsonscan.SkipValue(arr, i)
	return arr[i:ve], ve, true
}

func (e *env) popFrame() {
	f := &e.frames[len(e.frames)-1]
	e.spans = e.spans[:len(e.spans)-len(f.slots)]
	e.frames = e.frames[:len(e.frames)-1]
}

func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// frameSlots is the index of raw for site s, or nil.
func (e *env) frameSlots(s *site, raw string) []span {
	for i := len(e.frames) - 1; i >= 0; i-- {
		if f := &e.frames[i]; f.site == s && sameString(f.raw, raw) {
			return f.slots
		}
	}
	return nil
}

// lookup reads key of the raw object raw, through an index when one is
// active for site s.
func (e *env) lookup(raw, key string, s *site, slot int) value {
	if s != nil {
		for i := len(e.frames) - 1; i >= 0; i-- {
			f := &e.frames[i]
			if f.site == s && sameString(f.raw, raw) {
				sp := f.slots[slot]
				if sp.end == 0 {
					return vNull
				}
				return rawValue(e.src[sp.start:sp.end])
			}
		}
	}
	return e.rawMember(raw, key)
}
