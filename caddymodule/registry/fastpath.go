package registry

// The normalize fast path (issue 6 item 2).
//
// Normalizers are declared in jq and gojq stays the reference engine. At
// Provision, compilePlan turns the common subset of jq a normalizer uses
// into a plan: a tree of evaluators that read the upstream item's bytes in
// place (no generic decode into maps) and write the record straight into a
// byte buffer, in the bytes json.Marshal would produce for the gojq result.
// A program outside the subset gets no plan and runs on gojq; FastPath says
// why.
//
// At run time the plan gives up on an item (errBail) rather than guess:
// items it cannot read exactly (invalid JSON, invalid UTF-8, duplicate
// object keys, numbers out of float64 range), values it does not
// model (big integers, NaN, string repetition, …) and every jq error. The
// caller then runs gojq on the same bytes, so errors carry gojq's own text
// and a rare shape costs one gojq run, never a wrong record. The plan
// itself never decodes the item: it scans the bytes and copies or
// re-escapes the parts the record keeps; only an item that bails is
// decoded, once, for gojq.
//
// The raw item is scanned by hand rather than with gjson. gjson resolves a
// duplicated key to its first value and decodes escaped surrogates
// differently from encoding/json, and its path syntax needs keys escaped;
// the plan needs encoding/json's reading of the bytes, key for key.

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/itchyny/gojq"
)

var (
	// errBail: the plan cannot produce this item's record exactly; gojq
	// must run it. try and ? do not catch it.
	errBail = errors.New("fast path: item outside the plan")
	// errJQ: the program raised a jq error, which try and ? catch. The
	// message is not kept: the item reruns on gojq, which reports it.
	errJQ = errors.New("fast path: jq error")
	// errPanic: the plan panicked (a bug); the item went to gojq.
	errPanic = errors.New("fast path: panic")
)

// unsupported is a compile-time reason why a program has no plan.
type unsupported string

func (u unsupported) Error() string { return string(u) }

// indexThreshold is how many field reads of one object justify indexing
// its keys in one pass instead of scanning it for each read.
const indexThreshold = 3

// plan is a normalize program compiled for the fast path. It is immutable
// after compilePlan and safe for concurrent use.
type plan struct {
	root     node
	rootOpt  opter // root, when it has at most one output
	rootSite *site
	nvars    int
	envs     sync.Pool
}

// compilePlan compiles q into a plan, or reports why it cannot.
func compilePlan(q *gojq.Query) (pl *plan, why string) {
	defer func() {
		if r := recover(); r != nil { // an AST shape the compiler did not expect
			pl, why = nil, fmt.Sprintf("plan compiler: %v", r)
		}
	}()
	c := &planCompiler{}
	for _, name := range programVars {
		c.scope = append(c.scope, planVar{name: name, slot: c.nvars})
		c.nvars++
	}
	rootSite := &site{keys: map[string]int{}}
	n, err := c.query(q, rootSite)
	if err != nil {
		return nil, err.Error()
	}
	pl = &plan{root: n, rootSite: rootSite, nvars: c.nvars}
	pl.rootOpt, _ = asOpt(n)
	pl.envs.New = func() any { return &env{vars: make([]value, pl.nvars)} }
	return pl, ""
}

// normalize runs the plan over one raw item, with NormalizeItem's contract.
// errBail (for every failure) sends the item to gojq.
func (pl *plan) normalize(item []byte, input, now string) ([]byte, bool, error) {
	rec, ok, err := pl.run(item, input, now)
	if err != nil {
		return nil, false, errBail
	}
	return rec, ok, nil
}

// run is normalize with the cause of a failure: errJQ (the program raised
// an error), errBail (outside the plan) or errPanic.
func (pl *plan) run(item []byte, input, now string) (rec []byte, ok bool, err error) {
	if len(item) == 0 || len(item) > math.MaxInt32 {
		return nil, false, errBail
	}
	// The item is read in place; nothing derived from it outlives this
	// call (the record is a copy and the env is cleared before reuse).
	src := unsafe.String(&item[0], len(item))
	e := pl.envs.Get().(*env)
	defer func() {
		if r := recover(); r != nil {
			fastPathPanics.Add(1)
			rec, ok, err = nil, false, errPanic
		}
		e.reset()
		pl.envs.Put(e)
	}()
	if !e.validate(src) {
		return nil, false, errBail
	}
	e.src = src
	e.vars[0], e.vars[1] = strValue(input), strValue(now)
	root := rawValue(trimWS(src))
	if root.k == kObj && pl.rootSite.reads >= indexThreshold {
		e.pushFrame(pl.rootSite, root.s)
	}
	var out value
	if pl.rootOpt != nil {
		v, found, err := pl.rootOpt.opt(e, root)
		if err != nil {
			return nil, false, err
		}
		if found {
			out = v
		}
	} else {
		outs, err := pl.root.eval(e, root, e.getBuf())
		if err != nil {
			return nil, false, err
		}
		if len(outs) > 0 {
			out = outs[0]
		}
	}
	if out.k == kNull {
		return nil, false, nil
	}
	if out.k != kObj {
		return nil, false, errBail
	}
	w, err := e.writeTop(e.out[:0], out)
	e.out = w
	if err != nil {
		return nil, false, err
	}
	return append([]byte(nil), w...), true, nil
}

// ---------------------------------------------------------------------------
// Values

type kind uint8

// Kinds in jq's sort order (null < false < true < numbers < strings <
// arrays < objects).
const (
	kNull kind = iota
	kFalse
	kTrue
	kNum
	kStr
	kArr
	kObj
)

var kindNames = [...]string{"null", "boolean", "boolean", "number", "string", "array", "object"}

// value is one jq value. Raw values are JSON text of the item (s); the
// others are built by the plan: a string in s, a number in n (an int when
// isInt, else float64 bits), an array or object in c. A raw number is a
// float64, as encoding/json decodes it for gojq.
type value struct {
	k kind
	f flags
	n uint64
	s string
	c *comp
}

// flags of a value, in one byte so that a value and an error travel in
// registers.
type flags uint8

const (
	fRaw   flags = 1 << iota // s is JSON text of the item
	fInt                     // a number held as an int in n
	fPrune                   // an array or object seen through del(.. | nulls)
)

func (v value) raw() bool    { return v.f&fRaw != 0 }
func (v value) isInt() bool  { return v.f&fInt != 0 }
func (v value) pruned() bool { return v.f&fPrune != 0 }

// withPrune marks v pruned when p is and v is an array or object.
func (v value) withPrune(p bool) value {
	if p && v.k >= kArr {
		v.f |= fPrune
	}
	return v
}

// comp is a built array (arr) or object (keys and vals, parallel; sorted
// when the keys are in byte order). comps are never modified once built.
type comp struct {
	arr    []value
	keys   []string
	vals   []value
	sorted bool
}

var (
	vNull  = value{k: kNull}
	vFalse = value{k: kFalse}
	vTrue  = value{k: kTrue}
)

func boolValue(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

func strValue(s string) value    { return value{k: kStr, s: s} }
func intValue(i int) value       { return value{k: kNum, f: fInt, n: uint64(int64(i))} }
func floatValue(f float64) value { return value{k: kNum, n: math.Float64bits(f)} }

func (v value) truthy() bool { return v.k >= kTrue }

// str is the content of a string value.
func (v value) str() string {
	if !v.raw() {
		return v.s
	}
	body := v.s[1 : len(v.s)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body
	}
	return unquoteJSON(body)
}

// float is a number as float64.
func (v value) float() float64 {
	switch {
	case v.raw():
		f, _ := strconv.ParseFloat(v.s, 64)
		return f
	case v.isInt():
		return float64(int64(v.n))
	}
	return math.Float64frombits(v.n)
}

func (v value) int() int { return int(int64(v.n)) }

// rawValue types a JSON text of the item.
func rawValue(s string) value {
	switch s[0] {
	case '{':
		return value{k: kObj, f: fRaw, s: s}
	case '[':
		return value{k: kArr, f: fRaw, s: s}
	case '"':
		return value{k: kStr, f: fRaw, s: s}
	case 't':
		return vTrue
	case 'f':
		return vFalse
	case 'n':
		return vNull
	}
	return value{k: kNum, f: fRaw, s: s}
}

// ---------------------------------------------------------------------------
// Run-time environment

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
	pairs  []pair
	out    []byte
	bytes  []byte
	strbuf []byte
	keys   []keySpan
	table  []int32
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
	clear(e.spans)
	e.spans = e.spans[:0]
	clear(e.pairs)
	e.pairs = e.pairs[:0]
	clear(e.keys)
	e.keys = e.keys[:0]
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
	c := e.comps.alloc(1)
	if len(vs) > 0 {
		c[0].arr = e.vals.alloc(len(vs))
		copy(c[0].arr, vs)
	}
	return value{k: kArr, c: &c[0]}
}

// newObj stores a built object of n keys, to be filled by the caller.
func (e *env) newObj(n int, sorted bool) *comp {
	c := &e.comps.alloc(1)[0]
	c.keys = e.strs.alloc(n)
	c.vals = e.vals.alloc(n)
	c.sorted = sorted
	return c
}

// arena hands out slices from reusable chunks.
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
		clear(a.chunks[i])
		a.chunks[i] = a.chunks[i][:0]
	}
	a.cur = 0
}

// ---------------------------------------------------------------------------
// Sites: objects whose fields are read often enough to be indexed

// site is a place where one input object is read by several constant
// field reads (.name); each key read gets a slot.
type site struct {
	keys  map[string]int
	reads int
}

func (s *site) slot(key string) int {
	s.reads++
	if i, ok := s.keys[key]; ok {
		return i
	}
	i := len(s.keys)
	s.keys[key] = i
	return i
}

// pushFrame indexes the raw object raw for site s: one pass over its
// members fills the slots of the keys s reads.
func (e *env) pushFrame(s *site, raw string) {
	start := len(e.spans)
	for range len(s.keys) {
		e.spans = append(e.spans, span{})
	}
	slots := e.spans[start:len(e.spans):len(e.spans)]
	base := int(uintptr(unsafe.Pointer(unsafe.StringData(raw))) - uintptr(unsafe.Pointer(unsafe.StringData(e.src))))
	i := 1
	for {
		var k, v string
		var ok bool
		k, v, i, ok = nextMember(raw, i)
		if !ok {
			break
		}
		if slot, found := s.keys[k]; found {
			vs := int(uintptr(unsafe.Pointer(unsafe.StringData(v))) - uintptr(unsafe.Pointer(unsafe.StringData(raw))))
			slots[slot] = span{int32(base + vs), int32(base + vs + len(v))}
		}
	}
	e.frames = append(e.frames, frame{site: s, raw: raw, slots: slots})
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
	return rawMember(raw, key)
}

// ---------------------------------------------------------------------------
// Raw JSON scanning. The item is validated first, so the scanners below
// trust its syntax.

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipWS(s string, i int) int {
	for i < len(s) && isWS(s[i]) {
		i++
	}
	return i
}

func trimWS(s string) string {
	i, j := 0, len(s)
	for i < j && isWS(s[i]) {
		i++
	}
	for j > i && isWS(s[j-1]) {
		j--
	}
	return s[i:j]
}

// skipString returns the index after the string starting at s[i] == '"'.
func skipString(s string, i int) int {
	i++
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		i += j
		n := 0
		for k := i - 1; s[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index after the value starting at s[i].
func skipValue(s string, i int) int {
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for ; i < len(s); i++ {
			switch s[i] {
			case '"':
				i = skipString(s, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	case 't', 'n':
		return i + 4
	case 'f':
		return i + 5
	}
	for i++; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			break
		}
	}
	return i
}

// nextMember reads the member of a raw object at i (just after '{' or
// after the previous member): its key (decoded), its value text and the
// index to continue from.
func nextMember(s string, i int) (key, val string, next int, ok bool) {
	i = skipWS(s, i)
	if s[i] == ',' {
		i = skipWS(s, i+1)
	}
	if s[i] != '"' {
		return "", "", i, false
	}
	ke := skipString(s, i)
	key = s[i+1 : ke-1]
	if strings.IndexByte(key, '\\') >= 0 {
		key = unquoteJSON(key)
	}
	i = skipWS(s, ke)
	i = skipWS(s, i+1) // ':'
	ve := skipValue(s, i)
	return key, s[i:ve], ve, true
}

// nextElem reads the element of a raw array at i (just after '[' or after
// the previous element).
func nextElem(s string, i int) (val string, next int, ok bool) {
	i = skipWS(s, i)
	if s[i] == ',' {
		i = skipWS(s, i+1)
	}
	if s[i] == ']' {
		return "", i, false
	}
	ve := skipValue(s, i)
	return s[i:ve], ve, true
}

// rawMember is key of the raw object raw, or null.
func rawMember(raw, key string) value {
	for i := 1; ; {
		k, v, next, ok := nextMember(raw, i)
		if !ok {
			return vNull
		}
		if k == key {
			return rawValue(v)
		}
		i = next
	}
}

func rawEmpty(raw string) bool {
	return raw[skipWS(raw, 1)] == raw[len(raw)-1]
}

func rawLen(v value) int {
	n := 0
	if v.k == kObj {
		for i := 1; ; n++ {
			_, _, next, ok := nextMember(v.s, i)
			if !ok {
				return n
			}
			i = next
		}
	}
	for i := 1; ; n++ {
		_, next, ok := nextElem(v.s, i)
		if !ok {
			return n
		}
		i = next
	}
}

// elems appends the elements of an array value to out.
func (e *env) elems(v value, out []value) []value {
	if !v.raw() {
		return append(out, v.c.arr...)
	}
	for i := 1; ; {
		el, next, ok := nextElem(v.s, i)
		if !ok {
			return out
		}
		out = append(out, rawValue(el))
		i = next
	}
}

// sortedPairs is the members of an object value in key order, in a
// scratch slice of e (valid until the next call).
func (e *env) sortedPairs(v value) []pair {
	start := len(e.pairs)
	if v.raw() {
		for i := 1; ; {
			k, val, next, ok := nextMember(v.s, i)
			if !ok {
				break
			}
			e.pairs = append(e.pairs, pair{k, rawValue(val)})
			i = next
		}
	} else {
		for i, k := range v.c.keys {
			e.pairs = append(e.pairs, pair{k, v.c.vals[i]})
		}
	}
	ps := e.pairs[start:]
	if v.raw() || !v.c.sorted {
		slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.key, b.key) })
	}
	return ps
}

func (e *env) releasePairs(ps []pair) {
	clear(ps)
	e.pairs = e.pairs[:len(e.pairs)-len(ps)]
}

// member is key of an object value, or null.
func (e *env) member(v value, key string) value {
	if v.raw() {
		return rawMember(v.s, key)
	}
	for i, k := range v.c.keys {
		if k == key {
			return v.c.vals[i]
		}
	}
	return vNull
}

// unquoteJSON decodes the body of a JSON string literal as encoding/json
// does (invalid surrogates become U+FFFD).
func unquoteJSON(s string) string {
	b := make([]byte, 0, len(s))
	for r := 0; r < len(s); {
		c := s[r]
		if c != '\\' {
			b = append(b, c)
			r++
			continue
		}
		r++
		switch s[r] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			rr := getu4(s[r-1:])
			r += 5
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
					r += 6
					b = utf8.AppendRune(b, dec)
					continue
				}
				rr = unicode.ReplacementChar
			}
			b = utf8.AppendRune(b, rr)
			continue
		default: // " \ /
			b = append(b, s[r])
		}
		r++
	}
	return string(b)
}

func getu4(s string) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range []byte(s[2:6]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// ---------------------------------------------------------------------------
// Validation: the plan reads an item only when encoding/json would decode
// it to the same values the scanners see.

var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// Word-at-a-time byte tests (exact as booleans): eight bytes of s from i,
// and whether any of them is zero, equal to b or less than n (n <= 0x80).
const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

func anyLess(x uint64, n byte) uint64 { return (x - ones8*uint64(n)) &^ x & highs8 }
func anyEq(x uint64, b byte) uint64   { return anyLess(x^(ones8*uint64(b)), 1) }

// plainRun returns the length of the prefix of s[i:] made of bytes that
// are printable ASCII other than '"' and '\\' (and, when html, '<', '>' and
// '&'), a multiple of 8 bytes: the caller finishes byte by byte.
func plainRun(s string, i int, html bool) int {
	j := i
	for ; j+8 <= len(s); j += 8 {
		w := load8(s, j)
		m := w&highs8 | anyLess(w, 0x20) | anyEq(w, '"') | anyEq(w, '\\')
		if html {
			m |= anyEq(w, '<') | anyEq(w, '>') | anyEq(w, '&')
		}
		if m != 0 {
			break
		}
	}
	return j - i
}

type keySpan struct{ s string }

// validate accepts s when it is one JSON value (RFC 8259, as encoding/json
// reads it) in valid UTF-8, without duplicate object keys (once decoded),
// without numbers beyond float64 and nested at most 10000 deep. (Outside
// strings, a byte beyond ASCII is a syntax error.)
func (e *env) validate(s string) bool {
	i := skipWS(s, 0)
	if i == len(s) {
		return false
	}
	i = e.validValue(s, i, 0)
	return i >= 0 && skipWS(s, i) == len(s)
}

func (e *env) validValue(s string, i, depth int) int {
	if i >= len(s) {
		return -1
	}
	switch c := s[i]; c {
	case '"':
		end, _ := validString(s, i)
		return end
	case '{':
		if depth >= 10000 {
			return -1
		}
		start := len(e.keys)
		i = skipWS(s, i+1)
		if i < len(s) && s[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(s) || s[i] != '"' {
				return -1
			}
			end, esc := validString(s, i)
			if end < 0 {
				return -1
			}
			key := s[i+1 : end-1]
			if esc {
				key = unquoteJSON(key)
			}
			e.keys = append(e.keys, keySpan{key})
			i = skipWS(s, end)
			if i >= len(s) || s[i] != ':' {
				return -1
			}
			i = e.validValue(s, skipWS(s, i+1), depth+1)
			if i < 0 {
				return -1
			}
			i = skipWS(s, i)
			if i >= len(s) {
				return -1
			}
			if s[i] == '}' {
				ok := e.uniqueKeys(e.keys[start:])
				e.keys = e.keys[:start]
				if !ok {
					return -1
				}
				return i + 1
			}
			if s[i] != ',' {
				return -1
			}
			i = skipWS(s, i+1)
		}
	case '[':
		if depth >= 10000 {
			return -1
		}
		i = skipWS(s, i+1)
		if i < len(s) && s[i] == ']' {
			return i + 1
		}
		for {
			i = e.validValue(s, i, depth+1)
			if i < 0 {
				return -1
			}
			i = skipWS(s, i)
			if i >= len(s) {
				return -1
			}
			if s[i] == ']' {
				return i + 1
			}
			if s[i] != ',' {
				return -1
			}
			i = skipWS(s, i+1)
		}
	case 't':
		if strings.HasPrefix(s[i:], "true") {
			return i + 4
		}
	case 'f':
		if strings.HasPrefix(s[i:], "false") {
			return i + 5
		}
	case 'n':
		if strings.HasPrefix(s[i:], "null") {
			return i + 4
		}
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return validNumber(s, i)
		}
	}
	return -1
}

// validString returns the index after the string at s[i] and whether it
// holds escapes, or -1.
func validString(s string, i int) (int, bool) {
	esc := false
	for i++; ; {
		i += plainRun(s, i, false)
		for i < len(s) && !strStop[s[i]] {
			i++
		}
		if i >= len(s) {
			return -1, esc
		}
		if s[i] >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return -1, esc // invalid UTF-8: encoding/json would rewrite it
			}
			i += size
			continue
		}
		switch s[i] {
		case '"':
			return i + 1, esc
		case '\\':
			esc = true
			if i+1 >= len(s) {
				return -1, esc
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if getu4(s[i:]) < 0 {
					return -1, esc
				}
				i += 6
			default:
				return -1, esc
			}
		default: // control character
			return -1, esc
		}
	}
}

func validNumber(s string, i int) int {
	start := i
	if s[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if !digits() {
		return -1
	}
	exp := false
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return -1
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		exp = true
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return -1
		}
	}
	if exp || i-start > 300 {
		if _, err := strconv.ParseFloat(s[start:i], 64); err != nil {
			return -1
		}
	}
	return i
}

// uniqueKeys reports whether the keys of one object are distinct.
func (e *env) uniqueKeys(keys []keySpan) bool {
	n := len(keys)
	if n <= 16 {
		for i := 1; i < n; i++ {
			for j := range i {
				if keys[i].s == keys[j].s {
					return false
				}
			}
		}
		return true
	}
	size := 64
	for size < 2*n {
		size *= 2
	}
	if cap(e.table) < size {
		e.table = make([]int32, size)
	}
	t := e.table[:size]
	clear(t)
	for i, k := range keys {
		h := uint32(2166136261)
		for j := 0; j < len(k.s); j++ {
			h = (h ^ uint32(k.s[j])) * 16777619
		}
		for p := int(h) & (size - 1); ; p = (p + 1) & (size - 1) {
			if t[p] == 0 {
				t[p] = int32(i + 1)
				break
			}
			if keys[t[p]-1].s == k.s {
				return false
			}
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Writing: the bytes json.Marshal produces for the same value decoded.

// writeTop writes the record object, without its null members (the
// NormalizeItem rule).
func (e *env) writeTop(b []byte, v value) ([]byte, error) {
	return e.writeObject(b, v, v.pruned(), true)
}

func (e *env) write(b []byte, v value, prune bool) ([]byte, error) {
	switch v.k {
	case kNull:
		return append(b, "null"...), nil
	case kFalse:
		return append(b, "false"...), nil
	case kTrue:
		return append(b, "true"...), nil
	case kNum:
		return appendNumber(b, v)
	case kStr:
		if v.raw() {
			return appendRawString(b, v.s[1:len(v.s)-1]), nil
		}
		return appendJSONString(b, v.s), nil
	case kArr:
		prune = prune || v.pruned()
		b = append(b, '[')
		first := true
		if v.raw() {
			for i := 1; ; {
				el, next, ok := nextElem(v.s, i)
				if !ok {
					break
				}
				i = next
				if prune && el[0] == 'n' {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				var err error
				if b, err = e.write(b, rawValue(el), prune); err != nil {
					return b, err
				}
			}
		} else {
			for _, x := range v.c.arr {
				if prune && x.k == kNull {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				var err error
				if b, err = e.write(b, x, prune); err != nil {
					return b, err
				}
			}
		}
		return append(b, ']'), nil
	}
	return e.writeObject(b, v, prune || v.pruned(), false)
}

func (e *env) writeObject(b []byte, v value, prune, dropNulls bool) ([]byte, error) {
	b = append(b, '{')
	first := true
	one := func(k string, x value) error {
		if (prune || dropNulls) && x.k == kNull {
			return nil
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		b, err = e.write(b, x, prune)
		return err
	}
	if !v.raw() && v.c.sorted {
		for i, k := range v.c.keys {
			if err := one(k, v.c.vals[i]); err != nil {
				return b, err
			}
		}
	} else {
		ps := e.sortedPairs(v)
		for _, p := range ps {
			if err := one(p.key, p.val); err != nil {
				e.releasePairs(ps)
				return b, err
			}
		}
		e.releasePairs(ps)
	}
	return append(b, '}'), nil
}

// appendNumber writes a number as encoding/json writes a float64 or an
// int; NaN and infinities, which it rejects, bail.
func appendNumber(b []byte, v value) ([]byte, error) {
	if v.isInt() {
		return strconv.AppendInt(b, int64(v.n), 10), nil
	}
	if v.raw() && plainInt(v.s) {
		return append(b, v.s...), nil
	}
	f := v.float()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, errBail
	}
	return appendFloat(b, f), nil
}

// plainInt: an integer literal that float64 holds exactly and that
// encoding/json writes back unchanged.
func plainInt(s string) bool {
	if s[0] == '-' {
		s = s[1:]
	}
	if len(s) > 15 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendFloat formats f as encoding/json (and gojq's encoder) do.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if x := math.Abs(f); x != 0 && (x < 1e-6 || x >= 1e21) {
		format = 'e'
	}
	n0 := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n-n0 >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as json.Marshal does (HTML-safe).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringContent(b, s)
	return append(b, '"')
}

// appendRawString writes the string literal body (JSON text, escapes
// included) as json.Marshal writes the string it decodes to.
func appendRawString(b []byte, body string) []byte {
	b = append(b, '"')
	for {
		i := strings.IndexByte(body, '\\')
		if i < 0 {
			b = appendStringContent(b, body)
			return append(b, '"')
		}
		b = appendStringContent(b, body[:i])
		var r rune
		switch c := body[i+1]; c {
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			r = getu4(body[i:])
			i += 4
			if utf16.IsSurrogate(r) {
				if dec := utf16.DecodeRune(r, getu4(body[i+2:])); dec != unicode.ReplacementChar {
					r = dec
					i += 6
				} else {
					r = unicode.ReplacementChar
				}
			}
		default: // " \ /
			r = rune(c)
		}
		var tmp [utf8.UTFMax]byte
		b = appendStringContent(b, unsafe.String(&tmp[0], utf8.EncodeRune(tmp[:], r)))
		body = body[i+2:]
	}
}

// appendStringContent is appendJSONString without the quotes.
func appendStringContent(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if n := plainRun(s, i, true); n > 0 {
			i += n
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// gojqNumberText is tostring of a number: gojq's encoder.
func gojqNumberText(b []byte, v value) ([]byte, error) {
	if v.isInt() {
		return strconv.AppendInt(b, int64(v.n), 10), nil
	}
	if v.raw() && plainInt(v.s) {
		if v.s == "-0" {
			return append(b, "-0"...), nil
		}
		return append(b, v.s...), nil
	}
	f := v.float()
	if math.IsNaN(f) {
		return append(b, "null"...), nil
	}
	f = min(max(f, -math.MaxFloat64), math.MaxFloat64)
	return appendFloat(b, f), nil
}

// ---------------------------------------------------------------------------
// Comparison (gojq's Compare)

func (e *env) compare(l, r value) (int, error) {
	if l.k != r.k {
		return cmpInt(int(l.k), int(r.k)), nil
	}
	switch l.k {
	case kNum:
		if l.isInt() && r.isInt() {
			return cmpInt(l.int(), r.int()), nil
		}
		a, b := l.float(), r.float()
		switch {
		case a < b || math.IsNaN(a):
			return -1, nil
		case a == b:
			return 0, nil
		}
		return 1, nil
	case kStr:
		return strings.Compare(l.str(), r.str()), nil
	case kArr:
		if l.pruned() || r.pruned() {
			return 0, errBail
		}
		lb, rb := e.elems(l, e.getBuf()), e.elems(r, e.getBuf())
		defer e.putBuf(lb)
		defer e.putBuf(rb)
		for i := range min(len(lb), len(rb)) {
			if c, err := e.compare(lb[i], rb[i]); c != 0 || err != nil {
				return c, err
			}
		}
		return cmpInt(len(lb), len(rb)), nil
	case kObj:
		if l.pruned() || r.pruned() {
			return 0, errBail
		}
		lp := slices.Clone(e.sortedPairs(l))
		e.releasePairs(e.pairs[len(e.pairs)-len(lp):])
		rp := slices.Clone(e.sortedPairs(r))
		e.releasePairs(e.pairs[len(e.pairs)-len(rp):])
		for i := range min(len(lp), len(rp)) {
			if c := strings.Compare(lp[i].key, rp[i].key); c != 0 {
				return c, nil
			}
		}
		if len(lp) != len(rp) {
			return cmpInt(len(lp), len(rp)), nil
		}
		for i := range lp {
			if c, err := e.compare(lp[i].val, rp[i].val); c != 0 || err != nil {
				return c, err
			}
		}
		return 0, nil
	}
	return 0, nil
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ---------------------------------------------------------------------------
// Evaluators

// node evaluates a jq expression: it appends the outputs for input in to
// out. On error it returns the outputs produced before the error, in the
// order gojq would have produced them, so that try keeps exactly those.
type node interface {
	eval(e *env, in value, out []value) ([]value, error)
}

// oner is a node with exactly one output (or an error) for every input.
type oner interface {
	node
	one(e *env, in value) (value, error)
}

func evalOne(n oner, e *env, in value, out []value) ([]value, error) {
	v, err := n.one(e, in)
	if err != nil {
		return out, err
	}
	return append(out, v), nil
}

func asOne(n node) (oner, bool) {
	o, ok := n.(oner)
	return o, ok
}

// opter is a node with at most one output for every input.
type opter interface {
	node
	opt(e *env, in value) (v value, ok bool, err error)
}

func evalOpt(n opter, e *env, in value, out []value) ([]value, error) {
	v, ok, err := n.opt(e, in)
	if ok {
		out = append(out, v)
	}
	return out, err
}

// optOne adapts a oner to opter.
type optOne struct{ oner }

func (n optOne) opt(e *env, in value) (value, bool, error) {
	v, err := n.one(e, in)
	return v, err == nil, err
}

func asOpt(n node) (opter, bool) {
	switch o := n.(type) {
	case opter:
		return o, true
	case oner:
		return optOne{o}, true
	}
	return nil, false
}

type pipeOptNode struct{ l, r opter }

func (n *pipeOptNode) opt(e *env, in value) (value, bool, error) {
	v, ok, err := n.l.opt(e, in)
	if !ok || err != nil {
		return v, false, err
	}
	return n.r.opt(e, v)
}

func (n *pipeOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

// altOptNode is l // r with at most one output on the left and exactly one
// on the right.
type altOptNode struct {
	l opter
	r oner
}

func (n *altOptNode) one(e *env, in value) (value, error) {
	v, ok, err := n.l.opt(e, in)
	if err != nil || ok && v.truthy() {
		return v, err
	}
	return n.r.one(e, in)
}

func (n *altOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

type altOptOptNode struct{ l, r opter }

func (n *altOptOptNode) opt(e *env, in value) (value, bool, error) {
	v, ok, err := n.l.opt(e, in)
	if err != nil || ok && v.truthy() {
		return v, err == nil, err
	}
	return n.r.opt(e, in)
}

func (n *altOptOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

type ifOptNode struct {
	cond      oner
	then, els opter
}

func (n *ifOptNode) opt(e *env, in value) (value, bool, error) {
	v, err := n.cond.one(e, in)
	if err != nil {
		return vNull, false, err
	}
	if v.truthy() {
		return n.then.opt(e, in)
	}
	return n.els.opt(e, in)
}

func (n *ifOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

type selectOptNode struct{ cond oner }

func (n *selectOptNode) opt(e *env, in value) (value, bool, error) {
	v, err := n.cond.one(e, in)
	return in, err == nil && v.truthy(), err
}

func (n *selectOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

type tryOptNode struct{ body opter }

func (n *tryOptNode) opt(e *env, in value) (value, bool, error) {
	v, ok, err := n.body.opt(e, in)
	if err == errJQ {
		return vNull, false, nil
	}
	return v, ok, err
}

func (n *tryOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

type bindOptNode struct {
	src  oner
	body opter
	b    bindNode
}

func (n *bindOptNode) opt(e *env, in value) (value, bool, error) {
	v, err := n.src.one(e, in)
	if err != nil {
		return vNull, false, err
	}
	if n.b.bind(e, v) {
		defer e.popFrame()
	}
	return n.body.opt(e, in)
}

func (n *bindOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

// objectOptNode is objectNode when some value may have no output (then the
// object has none).
type objectOptNode struct {
	keys []string
	vals []opter
	slot []int
	site *site
}

func (n *objectOptNode) opt(e *env, in value) (value, bool, error) {
	if n.site != nil && in.k == kObj && in.raw() && !in.pruned() {
		e.pushFrame(n.site, in.s)
		defer e.popFrame()
	}
	c := e.newObj(len(n.keys), true)
	copy(c.keys, n.keys)
	for j, x := range n.vals {
		v, ok, err := x.opt(e, in)
		if !ok || err != nil {
			return vNull, false, err
		}
		if s := n.slot[j]; s >= 0 {
			c.vals[s] = v
		}
	}
	return value{k: kObj, c: c}, true, nil
}

func (n *objectOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

// typeSwitchNode is an if/elif chain on type == "…" tests: one branch per
// kind.
type typeSwitchNode struct{ branch [kObj + 1]node }

func (n *typeSwitchNode) eval(e *env, in value, out []value) ([]value, error) {
	return n.branch[in.k].eval(e, in, out)
}

type typeSwitch1Node struct {
	branch [kObj + 1]oner
	konst  [kObj + 1]*value // the branch's value when it is a constant
}

func (n *typeSwitch1Node) one(e *env, in value) (value, error) {
	if c := n.konst[in.k]; c != nil {
		return *c, nil
	}
	return n.branch[in.k].one(e, in)
}
func (n *typeSwitch1Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

type typeSwitchOptNode struct{ branch [kObj + 1]opter }

func (n *typeSwitchOptNode) opt(e *env, in value) (value, bool, error) {
	return n.branch[in.k].opt(e, in)
}
func (n *typeSwitchOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

// mkTypeSwitch builds the switch for if cond then a else b end when cond
// is a type test (b may itself be a switch, or anything else).
func mkTypeSwitch(cond *typeIsNode, then, els node) node {
	var br [kObj + 1]node
	for k := range br {
		if cond.kinds[k] != cond.neg {
			br[k] = specialize(then, kind(k))
		} else {
			br[k] = specialize(els, kind(k))
		}
	}
	var ones [kObj + 1]oner
	all := true
	for k, b := range br {
		if ones[k], all = asOne(b); !all {
			break
		}
	}
	if all {
		n := &typeSwitch1Node{branch: ones}
		for k, b := range br {
			if c, ok := b.(*constNode); ok {
				n.konst[k] = &c.v
			}
		}
		return n
	}
	var opts [kObj + 1]opter
	all = true
	for k, b := range br {
		if opts[k], all = asOpt(b); !all {
			break
		}
	}
	if all {
		return &typeSwitchOptNode{opts}
	}
	return &typeSwitchNode{br}
}

// specialize simplifies n for inputs of kind k: type tests and
// comparisons of the input with constants are decided, and the branches
// they select kept.
func specialize(n node, k kind) node {
	switch x := n.(type) {
	case *typeSwitchNode:
		return specialize(x.branch[k], k)
	case *typeSwitch1Node:
		return specialize(x.branch[k], k)
	case *typeSwitchOptNode:
		return specialize(x.branch[k], k)
	case *if1Node:
		if b, ok := decide(x.cond, k); ok {
			if b {
				return specialize(x.then, k)
			}
			return specialize(x.els, k)
		}
	case *ifOptNode:
		if b, ok := decide(x.cond, k); ok {
			if b {
				return specialize(x.then, k)
			}
			return specialize(x.els, k)
		}
	case optOne:
		return specialize(x.oner, k)
	}
	return n
}

// decide evaluates cond on an input of kind k when that is enough.
func decide(cond node, k kind) (bool, bool) {
	switch c := cond.(type) {
	case *typeIsNode:
		return c.kinds[k] != c.neg, true
	case *eqConstNode:
		if _, ok := c.x.(identNode); ok {
			switch {
			case c.c.k != k:
				return c.neg, true // a value of another kind is never equal
			case k <= kTrue:
				return !c.neg, true // null, false and true are their kind's only value
			}
		}
	}
	return false, false
}

// typeIsNode is type == "name" (or !=).
type typeIsNode struct {
	kinds [kObj + 1]bool
	neg   bool
}

func (n *typeIsNode) one(_ *env, in value) (value, error) {
	return boolValue(n.kinds[in.k] != n.neg), nil
}

func (n *typeIsNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// eqConstNode is x == c (or !=) for a scalar constant c.
type eqConstNode struct {
	x   oner
	c   value
	neg bool
}

func (n *eqConstNode) one(e *env, in value) (value, error) {
	v := in
	if _, ok := n.x.(identNode); !ok {
		var err error
		if v, err = n.x.one(e, in); err != nil {
			return vNull, err
		}
	}
	return boolValue(scalarEqual(v, n.c) != n.neg), nil
}

func (n *eqConstNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// scalarEqual is v == c for a scalar c.
func scalarEqual(v, c value) bool {
	if v.k != c.k {
		return false
	}
	switch v.k {
	case kNum:
		if v.isInt() && c.isInt() {
			return v.n == c.n
		}
		return v.float() == c.float()
	case kStr:
		if v.raw() {
			body := v.s[1 : len(v.s)-1]
			if c.s == "" {
				return body == "" // an escape never decodes to nothing
			}
			if strings.IndexByte(body, '\\') < 0 {
				return body == c.s
			}
		}
		return v.str() == c.s
	}
	return true
}

type identNode struct{}

func (identNode) one(_ *env, in value) (value, error) { return in, nil }
func (n identNode) eval(e *env, in value, out []value) ([]value, error) {
	return append(out, in), nil
}

type constNode struct{ v value }

func (n *constNode) one(*env, value) (value, error) { return n.v, nil }
func (n *constNode) eval(_ *env, _ value, out []value) ([]value, error) {
	return append(out, n.v), nil
}

type emptyNode struct{}

func (emptyNode) eval(_ *env, _ value, out []value) ([]value, error) { return out, nil }
func (emptyNode) opt(*env, value) (value, bool, error)               { return vNull, false, nil }

type varNode struct{ slot int }

func (n *varNode) one(e *env, _ value) (value, error) { return e.vars[n.slot], nil }
func (n *varNode) eval(e *env, in value, out []value) ([]value, error) {
	return append(out, e.vars[n.slot]), nil
}

// fieldNode is .key; site and slot locate the key in an index of the
// input when one is active.
type fieldNode struct {
	key  string
	site *site
	slot int
}

func (n *fieldNode) one(e *env, in value) (value, error) {
	switch in.k {
	case kNull:
		return vNull, nil
	case kObj:
		var v value
		if in.raw() {
			v = e.lookup(in.s, n.key, n.site, n.slot)
		} else {
			v = e.member(in, n.key)
		}
		v = v.withPrune(in.pruned())
		return v, nil
	}
	return vNull, errJQ
}

func (n *fieldNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// fieldPipeNode is .key | r; onNull is r's value for null when r is known
// to give a constant for it.
type fieldPipeNode struct {
	f      fieldNode
	r      oner
	onNull *value
}

func (n *fieldPipeNode) one(e *env, in value) (value, error) {
	v, err := n.f.one(e, in)
	if err != nil {
		return vNull, err
	}
	if v.k == kNull && n.onNull != nil {
		return *n.onNull, nil
	}
	return n.r.one(e, v)
}

func (n *fieldPipeNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// indexNode is .[i] for a constant number i.
type indexNode struct{ i int }

func (n *indexNode) one(e *env, in value) (value, error) { return e.indexAt(in, n.i) }
func (n *indexNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

func clampIndex(i, lo, hi int) int {
	if i < 0 {
		i += hi
	}
	return min(max(i, lo), hi)
}

// indexAt is funcIndex2 with a number.
func (e *env) indexAt(v value, i int) (value, error) {
	switch v.k {
	case kNull:
		return vNull, nil
	case kArr:
		if v.pruned() {
			return vNull, errBail
		}
		if !v.raw() {
			i = clampIndex(i, -1, len(v.c.arr))
			if 0 <= i && i < len(v.c.arr) {
				return v.c.arr[i], nil
			}
			return vNull, nil
		}
		if i < 0 {
			i = clampIndex(i, -1, rawLen(v))
			if i < 0 {
				return vNull, nil
			}
		}
		for j, p := 0, 1; ; j++ {
			el, next, ok := nextElem(v.s, p)
			if !ok {
				return vNull, nil
			}
			if j == i {
				return rawValue(el), nil
			}
			p = next
		}
	case kStr:
		s := v.str()
		l := utf8.RuneCountInString(s)
		i = clampIndex(i, -1, l)
		if 0 <= i && i < l {
			for _, r := range s {
				if i--; i < 0 {
					return strValue(string(r)), nil
				}
			}
		}
		return vNull, nil
	}
	return vNull, errJQ
}

func floatToInt(x float64) int {
	if math.MinInt <= x && x < math.MaxInt {
		return int(x)
	}
	if x > 0 {
		return math.MaxInt
	}
	return math.MinInt
}

// indexBy is funcIndex2: v[key].
func (e *env) indexBy(v, key value) (value, error) {
	switch key.k {
	case kStr:
		switch v.k {
		case kNull:
			return vNull, nil
		case kObj:
			r := e.member(v, key.str())
			r = r.withPrune(v.pruned())
			return r, nil
		}
		return vNull, errJQ
	case kNum:
		i := 0
		if key.isInt() {
			i = key.int()
		} else {
			i = floatToInt(key.float())
		}
		return e.indexAt(v, i)
	case kArr, kObj:
		return vNull, errBail
	}
	return vNull, errJQ
}

// indexDynNode is base[key] with key computed from the input.
type indexDynNode struct{ base, key node }

func (n *indexDynNode) eval(e *env, in value, out []value) ([]value, error) {
	keys, kerr := n.key.eval(e, in, e.getBuf())
	defer e.putBuf(keys)
	if len(keys) == 0 {
		return out, kerr
	}
	bases, berr := n.base.eval(e, in, e.getBuf())
	defer e.putBuf(bases)
	for _, k := range keys {
		for _, b := range bases {
			v, err := e.indexBy(b, k)
			if err != nil {
				return out, err
			}
			out = append(out, v)
		}
		if berr != nil {
			return out, berr
		}
	}
	return out, kerr
}

type indexDyn1Node struct{ base, key oner }

func (n *indexDyn1Node) one(e *env, in value) (value, error) {
	k, err := n.key.one(e, in)
	if err != nil {
		return vNull, err
	}
	b, err := n.base.one(e, in)
	if err != nil {
		return vNull, err
	}
	return e.indexBy(b, k)
}

func (n *indexDyn1Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// iterNode is .[]: array elements, or object values in key order.
type iterNode struct{}

func (iterNode) eval(e *env, in value, out []value) ([]value, error) {
	switch in.k {
	case kArr:
		if in.pruned() {
			return out, errBail
		}
		return e.elems(in, out), nil
	case kObj:
		if in.pruned() {
			return out, errBail
		}
		ps := e.sortedPairs(in)
		for _, p := range ps {
			out = append(out, p.val)
		}
		e.releasePairs(ps)
		return out, nil
	}
	return out, errJQ
}

// tryNode is try body (no catch), and the ? suffix.
type tryNode struct{ body node }

func (n *tryNode) eval(e *env, in value, out []value) ([]value, error) {
	out, err := n.body.eval(e, in, out)
	if err == errJQ {
		err = nil
	}
	return out, err
}

type pipeNode struct{ l, r node }

func (n *pipeNode) eval(e *env, in value, out []value) ([]value, error) {
	if l, ok := n.l.(oner); ok {
		v, err := l.one(e, in)
		if err != nil {
			return out, err
		}
		return n.r.eval(e, v, out)
	}
	buf, lerr := n.l.eval(e, in, e.getBuf())
	var err error
	for _, v := range buf {
		if out, err = n.r.eval(e, v, out); err != nil {
			e.putBuf(buf)
			return out, err
		}
	}
	e.putBuf(buf)
	return out, lerr
}

type pipe1Node struct{ l, r oner }

func (n *pipe1Node) one(e *env, in value) (value, error) {
	v, err := n.l.one(e, in)
	if err != nil {
		return vNull, err
	}
	return n.r.one(e, v)
}

func (n *pipe1Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

func mkPipe(l, r node) node {
	if _, ok := l.(identNode); ok {
		return r
	}
	if _, ok := r.(identNode); ok {
		return l
	}
	lo, lok := asOne(l)
	ro, rok := asOne(r)
	if !lok {
		lo = nil
	}
	if f, ok := l.(*fieldNode); ok && rok {
		n := &fieldPipeNode{f: *f, r: ro}
		switch r := r.(type) {
		case *typeSwitch1Node:
			n.onNull = r.konst[kNull]
		case *constNode:
			n.onNull = &r.v
		case *fn0Node:
			// Builtins read no variables: their value for null is fixed.
			if v, err := r.f(&env{}, vNull); err == nil {
				n.onNull = &v
			}
		}
		return n
	}
	if lok && rok {
		return &pipe1Node{lo, ro}
	}
	lp, lok := asOpt(l)
	rp, rok := asOpt(r)
	if lok && rok {
		return &pipeOptNode{lp, rp}
	}
	// x[], x[]? and what follows them element by element.
	if lo != nil {
		switch r := r.(type) {
		case iterNode:
			return &iterMapNode{src: lo}
		case *tryNode:
			if _, ok := r.body.(iterNode); ok {
				return &iterMapNode{src: lo, optional: true}
			}
		}
	}
	if m, ok := l.(*iterMapNode); ok && rok {
		f := rp
		if m.f != nil {
			f = &pipeOptNode{m.f, rp}
		}
		return &iterMapNode{src: m.src, optional: m.optional, f: f}
	}
	return &pipeNode{l, r}
}

// iterMapNode is src | .[] | f (src | try .[] | f when optional): the
// elements of src's value (object values in key order), each through f,
// which has at most one output.
type iterMapNode struct {
	src      oner
	optional bool
	f        opter // nil: the elements themselves
}

func (n *iterMapNode) eval(e *env, in value, out []value) ([]value, error) {
	v, err := n.src.one(e, in)
	if err != nil {
		return out, err
	}
	each := func(x value) error {
		if n.f == nil {
			out = append(out, x)
			return nil
		}
		y, ok, err := n.f.opt(e, x)
		if ok {
			out = append(out, y)
		}
		return err
	}
	switch {
	case v.k == kArr && !v.pruned():
		if !v.raw() {
			for _, x := range v.c.arr {
				if err := each(x); err != nil {
					return out, err
				}
			}
			return out, nil
		}
		for i := 1; ; {
			el, next, ok := nextElem(v.s, i)
			if !ok {
				return out, nil
			}
			if err := each(rawValue(el)); err != nil {
				return out, err
			}
			i = next
		}
	case v.k == kObj && !v.pruned():
		ps := e.sortedPairs(v)
		defer e.releasePairs(ps)
		for _, p := range ps {
			if err := each(p.val); err != nil {
				return out, err
			}
		}
		return out, nil
	case v.k >= kArr:
		return out, errBail
	case n.optional:
		return out, nil
	}
	return out, errJQ
}

type commaNode struct{ l, r node }

func (n *commaNode) eval(e *env, in value, out []value) ([]value, error) {
	out, err := n.l.eval(e, in, out)
	if err != nil {
		return out, err
	}
	return n.r.eval(e, in, out)
}

// altNode is l // r: the truthy outputs of l, else the outputs of r. An
// error in l propagates (gojq does not suppress it).
type altNode struct{ l, r node }

func (n *altNode) eval(e *env, in value, out []value) ([]value, error) {
	buf, err := n.l.eval(e, in, e.getBuf())
	found := false
	for _, v := range buf {
		if v.truthy() {
			out = append(out, v)
			found = true
		}
	}
	e.putBuf(buf)
	if err != nil || found {
		return out, err
	}
	return n.r.eval(e, in, out)
}

type alt1Node struct {
	l oner
	r node
}

func (n *alt1Node) eval(e *env, in value, out []value) ([]value, error) {
	v, err := n.l.one(e, in)
	if err != nil {
		return out, err
	}
	if v.truthy() {
		return append(out, v), nil
	}
	return n.r.eval(e, in, out)
}

type alt11Node struct{ l, r oner }

func (n *alt11Node) one(e *env, in value) (value, error) {
	v, err := n.l.one(e, in)
	if err != nil || v.truthy() {
		return v, err
	}
	return n.r.one(e, in)
}

func (n *alt11Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

func mkAlt(l, r node) node {
	lo, lok := asOne(l)
	ro, rok := asOne(r)
	switch {
	case lok && rok:
		return &alt11Node{lo, ro}
	case lok:
		return &alt1Node{lo, r}
	}
	if lp, ok := asOpt(l); ok {
		if rok {
			return &altOptNode{lp, ro}
		}
		if rp, ok := asOpt(r); ok {
			return &altOptOptNode{lp, rp}
		}
	}
	return &altNode{l, r}
}

// ifNode is if cond then a else b end (elif chains nest in b; a missing
// else is the identity).
type ifNode struct{ cond, then, els node }

func (n *ifNode) eval(e *env, in value, out []value) ([]value, error) {
	if c, ok := n.cond.(oner); ok {
		v, err := c.one(e, in)
		if err != nil {
			return out, err
		}
		if v.truthy() {
			return n.then.eval(e, in, out)
		}
		return n.els.eval(e, in, out)
	}
	buf, cerr := n.cond.eval(e, in, e.getBuf())
	var err error
	for _, v := range buf {
		br := n.els
		if v.truthy() {
			br = n.then
		}
		if out, err = br.eval(e, in, out); err != nil {
			e.putBuf(buf)
			return out, err
		}
	}
	e.putBuf(buf)
	return out, cerr
}

type if1Node struct{ cond, then, els oner }

func (n *if1Node) one(e *env, in value) (value, error) {
	v, err := n.cond.one(e, in)
	if err != nil {
		return vNull, err
	}
	if v.truthy() {
		return n.then.one(e, in)
	}
	return n.els.one(e, in)
}

func (n *if1Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// andNode and orNode are jq's short-circuit boolean operators.
type andNode struct {
	l, r node
	or   bool
}

func (n *andNode) eval(e *env, in value, out []value) ([]value, error) {
	ls, lerr := n.l.eval(e, in, e.getBuf())
	defer e.putBuf(ls)
	for _, l := range ls {
		if l.truthy() == n.or {
			out = append(out, boolValue(n.or))
			continue
		}
		rs, rerr := n.r.eval(e, in, e.getBuf())
		for _, r := range rs {
			out = append(out, boolValue(r.truthy()))
		}
		e.putBuf(rs)
		if rerr != nil {
			return out, rerr
		}
	}
	return out, lerr
}

type and1Node struct {
	l, r oner
	or   bool
}

func (n *and1Node) one(e *env, in value) (value, error) {
	l, err := n.l.one(e, in)
	if err != nil {
		return vNull, err
	}
	if l.truthy() == n.or {
		return boolValue(n.or), nil
	}
	r, err := n.r.one(e, in)
	return boolValue(r.truthy()), err
}

func (n *and1Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// binop is an arithmetic or comparison operator.
type binop func(e *env, l, r value) (value, error)

// binNode applies op to every pair of outputs, the right operand in the
// outer loop, as gojq does.
type binNode struct {
	op   binop
	l, r node
}

func (n *binNode) eval(e *env, in value, out []value) ([]value, error) {
	rs, rerr := n.r.eval(e, in, e.getBuf())
	defer e.putBuf(rs)
	if len(rs) == 0 {
		return out, rerr
	}
	ls, lerr := n.l.eval(e, in, e.getBuf())
	defer e.putBuf(ls)
	for _, r := range rs {
		for _, l := range ls {
			v, err := n.op(e, l, r)
			if err != nil {
				return out, err
			}
			out = append(out, v)
		}
		if lerr != nil {
			return out, lerr
		}
	}
	return out, rerr
}

type bin1Node struct {
	op   binop
	l, r oner
}

func (n *bin1Node) one(e *env, in value) (value, error) {
	r, err := n.r.one(e, in)
	if err != nil {
		return vNull, err
	}
	l, err := n.l.one(e, in)
	if err != nil {
		return vNull, err
	}
	return n.op(e, l, r)
}

func (n *bin1Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

func mkBin(op binop, l, r node) node {
	lo, lok := asOne(l)
	ro, rok := asOne(r)
	if lok && rok {
		return &bin1Node{op, lo, ro}
	}
	return &binNode{op, l, r}
}

func cmpOp(test func(int) bool) binop {
	return func(e *env, l, r value) (value, error) {
		c, err := e.compare(l, r)
		return boolValue(test(c)), err
	}
}

// numbers returns l and r as ints (both ints) or float64s.
func numbers(l, r value) (li, ri int, lf, rf float64, ints bool) {
	if l.isInt() && r.isInt() {
		return l.int(), r.int(), 0, 0, true
	}
	return 0, 0, l.float(), r.float(), false
}

func opAdd(e *env, l, r value) (value, error) {
	switch {
	case l.k == kNum && r.k == kNum:
		li, ri, lf, rf, ints := numbers(l, r)
		if ints {
			if v := li + ri; (v >= li) == (ri >= 0) {
				return intValue(v), nil
			}
			return vNull, errBail
		}
		return floatValue(lf + rf), nil
	case l.k == kStr && r.k == kStr:
		return strValue(e.concat(l.str(), r.str())), nil
	case l.k == kNull:
		return r, nil
	case r.k == kNull:
		return l, nil
	case l.k == kArr && r.k == kArr:
		if l.pruned() || r.pruned() {
			return vNull, errBail
		}
		buf := e.elems(r, e.elems(l, e.getBuf()))
		v := e.newArr(buf)
		e.putBuf(buf)
		return v, nil
	case l.k == kObj && r.k == kObj:
		return vNull, errBail
	}
	return vNull, errJQ
}

func opSub(_ *env, l, r value) (value, error) {
	switch {
	case l.k == kNum && r.k == kNum:
		li, ri, lf, rf, ints := numbers(l, r)
		if ints {
			if v := li - ri; (v <= li) == (ri >= 0) {
				return intValue(v), nil
			}
			return vNull, errBail
		}
		return floatValue(lf - rf), nil
	case l.k == kArr && r.k == kArr:
		return vNull, errBail
	}
	return vNull, errJQ
}

func opMul(_ *env, l, r value) (value, error) {
	switch {
	case l.k == kNum && r.k == kNum:
		li, ri, lf, rf, ints := numbers(l, r)
		if ints {
			if ri == -1 {
				if li == math.MinInt {
					return vNull, errBail
				}
				return intValue(-li), nil
			}
			if v := li * ri; ri == 0 || v/ri == li {
				return intValue(v), nil
			}
			return vNull, errBail
		}
		return floatValue(lf * rf), nil
	case l.k == kStr && r.k == kNum, l.k == kNum && r.k == kStr, l.k == kObj && r.k == kObj:
		return vNull, errBail
	}
	return vNull, errJQ
}

func opDiv(_ *env, l, r value) (value, error) {
	switch {
	case l.k == kNum && r.k == kNum:
		li, ri, lf, rf, ints := numbers(l, r)
		if ints {
			switch {
			case ri == 0:
				return vNull, errJQ
			case ri == -1:
				if li == math.MinInt {
					return vNull, errBail
				}
				return intValue(-li), nil
			case li%ri == 0:
				return intValue(li / ri), nil
			}
			return floatValue(float64(li) / float64(ri)), nil
		}
		if rf == 0 {
			return vNull, errJQ
		}
		return floatValue(lf / rf), nil
	case l.k == kStr && r.k == kStr:
		return vNull, errBail
	}
	return vNull, errJQ
}

func opMod(_ *env, l, r value) (value, error) {
	if l.k != kNum || r.k != kNum {
		return vNull, errJQ
	}
	li, ri, lf, rf, ints := numbers(l, r)
	if ints {
		switch ri {
		case 0:
			return vNull, errJQ
		case -1:
			return intValue(0), nil
		}
		return intValue(li % ri), nil
	}
	if math.IsNaN(lf) || math.IsNaN(rf) {
		return vNull, errBail
	}
	d := floatToInt(rf)
	if d == 0 {
		return vNull, errJQ
	}
	return intValue(floatToInt(lf) % d), nil
}

// negNode is unary minus.
type negNode struct{ x node }

func (n *negNode) eval(e *env, in value, out []value) ([]value, error) {
	buf, err := n.x.eval(e, in, e.getBuf())
	defer e.putBuf(buf)
	for _, v := range buf {
		w, err := negate(v)
		if err != nil {
			return out, err
		}
		out = append(out, w)
	}
	return out, err
}

func negate(v value) (value, error) {
	switch {
	case v.k != kNum:
		return vNull, errJQ
	case v.isInt():
		if v.int() == math.MinInt {
			return vNull, errBail
		}
		return intValue(-v.int()), nil
	}
	return floatValue(-v.float()), nil
}

// objectNode builds an object from constant keys, every value having one
// output. keys are sorted and unique; vals holds every value expression in
// declaration order, slot[j] the key index of vals[j] or -1 when a later
// declaration of the same key overrides it.
type objectNode struct {
	keys []string
	vals []oner
	slot []int
	site *site // set when the object's input gets its own index
	// fields[j] is vals[j] when it is .key | f read through the index of
	// inSite, the site of the object's input: the object reads it from
	// the slots directly.
	fields []*fieldPipeNode
	inSite *site
}

func (n *objectNode) one(e *env, in value) (value, error) {
	var slots []span
	if in.k == kObj && in.raw() && !in.pruned() {
		if n.site != nil {
			e.pushFrame(n.site, in.s)
			defer e.popFrame()
		}
		if n.inSite != nil {
			slots = e.frameSlots(n.inSite, in.s)
		}
	}
	c := e.newObj(len(n.keys), true)
	copy(c.keys, n.keys)
	for j, x := range n.vals {
		var v value
		var err error
		if f := n.fields[j]; f != nil && slots != nil {
			v = vNull
			if sp := slots[f.f.slot]; sp.end != 0 {
				v = rawValue(e.src[sp.start:sp.end])
			}
			if v.k == kNull && f.onNull != nil {
				v = *f.onNull
			} else {
				v, err = f.r.one(e, v)
			}
		} else {
			v, err = x.one(e, in)
		}
		if err != nil {
			return vNull, err
		}
		if s := n.slot[j]; s >= 0 {
			c.vals[s] = v
		}
	}
	return value{k: kObj, c: c}, nil
}

func (n *objectNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// objectsNode is objectNode when some value has other than one output: one
// object per combination, the first key varying slowest (as gojq does).
type objectsNode struct {
	keys []string
	vals []node
	slot []int
	site *site
}

func (n *objectsNode) eval(e *env, in value, out []value) ([]value, error) {
	if n.site != nil && in.k == kObj && in.raw() && !in.pruned() {
		e.pushFrame(n.site, in.s)
		defer e.popFrame()
	}
	bufs := make([][]value, len(n.vals))
	errs := make([]error, len(n.vals))
	defer func() {
		for _, b := range bufs {
			if b != nil {
				e.putBuf(b)
			}
		}
	}()
	for j, x := range n.vals {
		bufs[j], errs[j] = x.eval(e, in, e.getBuf())
		if len(bufs[j]) == 0 {
			return out, errs[j]
		}
	}
	cur := make([]value, len(n.keys))
	var gen func(j int) error
	gen = func(j int) error {
		if j == len(n.vals) {
			c := e.newObj(len(n.keys), true)
			copy(c.keys, n.keys)
			copy(c.vals, cur)
			out = append(out, value{k: kObj, c: c})
			return nil
		}
		for _, v := range bufs[j] {
			if s := n.slot[j]; s >= 0 {
				cur[s] = v
			}
			if err := gen(j + 1); err != nil {
				return err
			}
		}
		return errs[j]
	}
	err := gen(0)
	return out, err
}

// arrayNode is [body].
type arrayNode struct{ body node }

func (n *arrayNode) one(e *env, in value) (value, error) {
	buf, err := n.body.eval(e, in, e.getBuf())
	if err != nil {
		e.putBuf(buf)
		return vNull, err
	}
	v := e.newArr(buf)
	e.putBuf(buf)
	return v, nil
}

func (n *arrayNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// interpNode is a string with interpolations whose parts have one output
// each (tostring applied).
type interpNode struct{ parts []oner }

func (n *interpNode) one(e *env, in value) (value, error) {
	vals := e.getBuf()
	defer e.putBuf(vals)
	for _, p := range n.parts {
		v, err := p.one(e, in)
		if err != nil {
			return vNull, err
		}
		vals = append(vals, v)
	}
	b := e.bytes[:0]
	for _, v := range vals {
		var err error
		if b, err = appendToString(b, v); err != nil {
			return vNull, err
		}
	}
	e.bytes = b[:0]
	return strValue(e.keep(b)), nil
}

func (n *interpNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// bindNode is src as $var | body.
type bindNode struct {
	src, body node
	slot      int
	site      *site
}

func (n *bindNode) bind(e *env, v value) bool {
	e.vars[n.slot] = v
	if n.site != nil && v.k == kObj && v.raw() && !v.pruned() && n.site.reads >= indexThreshold {
		e.pushFrame(n.site, v.s)
		return true
	}
	return false
}

func (n *bindNode) eval(e *env, in value, out []value) ([]value, error) {
	if s, ok := n.src.(oner); ok {
		v, err := s.one(e, in)
		if err != nil {
			return out, err
		}
		if n.bind(e, v) {
			defer e.popFrame()
		}
		return n.body.eval(e, in, out)
	}
	buf, serr := n.src.eval(e, in, e.getBuf())
	defer e.putBuf(buf)
	for _, v := range buf {
		pushed := n.bind(e, v)
		var err error
		out, err = n.body.eval(e, in, out)
		if pushed {
			e.popFrame()
		}
		if err != nil {
			return out, err
		}
	}
	return out, serr
}

type bind1Node struct {
	src, body oner
	b         bindNode
}

func (n *bind1Node) one(e *env, in value) (value, error) {
	v, err := n.src.one(e, in)
	if err != nil {
		return vNull, err
	}
	if n.b.bind(e, v) {
		defer e.popFrame()
	}
	return n.body.one(e, in)
}

func (n *bind1Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// selectNode is select(cond).
type selectNode struct{ cond node }

func (n *selectNode) eval(e *env, in value, out []value) ([]value, error) {
	if c, ok := n.cond.(oner); ok {
		v, err := c.one(e, in)
		if err == nil && v.truthy() {
			out = append(out, in)
		}
		return out, err
	}
	buf, err := n.cond.eval(e, in, e.getBuf())
	for _, v := range buf {
		if v.truthy() {
			out = append(out, in)
		}
	}
	e.putBuf(buf)
	return out, err
}

// typeNode is objects, strings, … : select by type.
type typeNode struct{ keep [kObj + 1]bool }

func (n *typeNode) opt(_ *env, in value) (value, bool, error) { return in, n.keep[in.k], nil }

func (n *typeNode) eval(_ *env, in value, out []value) ([]value, error) {
	if n.keep[in.k] {
		out = append(out, in)
	}
	return out, nil
}

// fn0Node is a builtin of no arguments.
type fn0Node struct {
	f func(e *env, v value) (value, error)
}

func (n *fn0Node) one(e *env, in value) (value, error) { return n.f(e, in) }
func (n *fn0Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// fn1Node is a builtin of one $-argument, computed from the input.
type fn1Node struct {
	arg node
	f   func(e *env, v, a value) (value, error)
}

func (n *fn1Node) eval(e *env, in value, out []value) ([]value, error) {
	buf, aerr := n.arg.eval(e, in, e.getBuf())
	defer e.putBuf(buf)
	for _, a := range buf {
		v, err := n.f(e, in, a)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, aerr
}

type fn11Node struct {
	arg oner
	f   func(e *env, v, a value) (value, error)
}

func (n *fn11Node) one(e *env, in value) (value, error) {
	a, err := n.arg.one(e, in)
	if err != nil {
		return vNull, err
	}
	return n.f(e, in, a)
}

func (n *fn11Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// mapNode is map(f): [.[] | f].
type mapNode struct{ f node }

func (n *mapNode) one(e *env, in value) (value, error) {
	items, err := iterNode{}.eval(e, in, e.getBuf())
	defer e.putBuf(items)
	if err != nil {
		return vNull, err
	}
	res := e.getBuf()
	defer e.putBuf(res)
	for _, x := range items {
		if res, err = n.f.eval(e, x, res); err != nil {
			return vNull, err
		}
	}
	return e.newArr(res), nil
}

func (n *mapNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// withEntriesNode is with_entries(f): to_entries | map(f) | from_entries.
type withEntriesNode struct{ f node }

func (n *withEntriesNode) one(e *env, in value) (value, error) {
	ents, err := toEntries(e, in)
	if err != nil {
		return vNull, err
	}
	res := e.getBuf()
	defer e.putBuf(res)
	for _, x := range ents.c.arr {
		if res, err = n.f.eval(e, x, res); err != nil {
			return vNull, err
		}
	}
	return fromEntries(e, res)
}

func (n *withEntriesNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// assignNode is .key = rhs.
type assignNode struct {
	key string
	rhs node
}

func (n *assignNode) eval(e *env, in value, out []value) ([]value, error) {
	buf, rerr := n.rhs.eval(e, in, e.getBuf())
	defer e.putBuf(buf)
	for _, v := range buf {
		w, err := setKey(e, in, n.key, v)
		if err != nil {
			return out, err
		}
		out = append(out, w)
	}
	return out, rerr
}

// setKey is setpath([key]; v).
func setKey(e *env, obj value, key string, v value) (value, error) {
	switch obj.k {
	case kNull:
		c := e.newObj(1, true)
		c.keys[0], c.vals[0] = key, v
		return value{k: kObj, c: c}, nil
	case kObj:
		if obj.pruned() {
			return vNull, errBail
		}
		ps := e.sortedPairs(obj)
		n := len(ps)
		at := n
		for i, p := range ps {
			if p.key == key {
				at = i
				n--
				break
			}
		}
		c := e.newObj(n+1, true)
		j := 0
		inserted := false
		for i, p := range ps {
			if i == at {
				continue
			}
			if !inserted && key < p.key {
				c.keys[j], c.vals[j] = key, v
				j++
				inserted = true
			}
			c.keys[j], c.vals[j] = p.key, p.val
			j++
		}
		if !inserted {
			c.keys[j], c.vals[j] = key, v
		}
		e.releasePairs(ps)
		return value{k: kObj, c: c}, nil
	}
	return vNull, errJQ
}

// pruneNode is del(.. | nulls): every null removed, at any depth.
type pruneNode struct{}

func (pruneNode) one(e *env, in value) (value, error) { return prune(e, in), nil }
func (n pruneNode) eval(e *env, in value, out []value) ([]value, error) {
	return append(out, prune(e, in)), nil
}

// prune marks v: the writer leaves out its nulls at any depth. Other
// readers of a marked array or object bail (nothing but the writer reads
// a record after del(.. | nulls) in the normalizers).
func prune(_ *env, v value) value {
	if v.k >= kArr {
		v.f |= fPrune
	}
	return v
}

// ---------------------------------------------------------------------------
// Builtins

// appendToString appends tostring of v. Arrays and objects are written by
// gojq's own encoder (jq's key order and escaping).
func appendToString(b []byte, v value) ([]byte, error) {
	switch v.k {
	case kStr:
		return append(b, v.str()...), nil
	case kNum:
		return gojqNumberText(b, v)
	case kNull, kFalse, kTrue:
		return append(b, [...]string{"null", "false", "true"}[v.k]...), nil
	}
	x, err := toAny(v)
	if err != nil {
		return b, err
	}
	text, err := gojq.Marshal(x)
	if err != nil {
		return b, errBail
	}
	return append(b, text...), nil
}

// toAny is v as gojq holds it (encoding/json's decoding of raw values).
func toAny(v value) (any, error) {
	switch v.k {
	case kNull:
		return nil, nil
	case kFalse, kTrue:
		return v.k == kTrue, nil
	case kNum:
		if v.isInt() {
			return v.int(), nil
		}
		return v.float(), nil
	case kStr:
		return v.str(), nil
	}
	if v.pruned() {
		return nil, errBail
	}
	if v.k == kArr {
		var xs []any
		add := func(x value) error {
			a, err := toAny(x)
			xs = append(xs, a)
			return err
		}
		if v.raw() {
			for i := 1; ; {
				el, next, ok := nextElem(v.s, i)
				if !ok {
					break
				}
				if err := add(rawValue(el)); err != nil {
					return nil, err
				}
				i = next
			}
		} else {
			for _, x := range v.c.arr {
				if err := add(x); err != nil {
					return nil, err
				}
			}
		}
		if xs == nil {
			xs = []any{}
		}
		return xs, nil
	}
	m := map[string]any{}
	put := func(k string, x value) error {
		a, err := toAny(x)
		m[k] = a
		return err
	}
	if v.raw() {
		for i := 1; ; {
			k, val, next, ok := nextMember(v.s, i)
			if !ok {
				break
			}
			if err := put(k, rawValue(val)); err != nil {
				return nil, err
			}
			i = next
		}
	} else {
		for i, k := range v.c.keys {
			if err := put(k, v.c.vals[i]); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func bType(_ *env, v value) (value, error) { return strValue(kindNames[v.k]), nil }

func bNot(_ *env, v value) (value, error) { return boolValue(!v.truthy()), nil }

func bLength(_ *env, v value) (value, error) {
	switch v.k {
	case kNull:
		return intValue(0), nil
	case kNum:
		if v.isInt() {
			if v.int() == math.MinInt {
				return vNull, errBail
			}
			return intValue(max(v.int(), -v.int())), nil
		}
		return floatValue(math.Abs(v.float())), nil
	case kStr:
		return intValue(utf8.RuneCountInString(v.str())), nil
	case kArr, kObj:
		switch {
		case v.pruned():
			return vNull, errBail
		case v.raw():
			return intValue(rawLen(v)), nil
		case v.k == kArr:
			return intValue(len(v.c.arr)), nil
		}
		return intValue(len(v.c.keys)), nil
	}
	return vNull, errJQ
}

func bToString(e *env, v value) (value, error) {
	if v.k == kStr {
		return v, nil
	}
	b, err := appendToString(e.bytes[:0], v)
	if err != nil {
		return vNull, err
	}
	e.bytes = b[:0]
	return strValue(e.keep(b)), nil
}

var (
	intLiteral   = regexp.MustCompile(`^-?(?:0|[1-9][0-9]{0,17})$`)
	floatLiteral = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)
)

// bToNumber is tonumber for numbers and plain JSON number texts; other
// strings go to gojq, whose number syntax is wider.
func bToNumber(_ *env, v value) (value, error) {
	switch v.k {
	case kNum:
		return v, nil
	case kStr:
		s := v.str()
		if intLiteral.MatchString(s) {
			i, err := strconv.Atoi(s)
			if err == nil {
				return intValue(i), nil
			}
		} else if floatLiteral.MatchString(s) && strings.ContainsAny(s, ".eE") {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return floatValue(f), nil
			}
		}
		return vNull, errBail
	}
	return vNull, errJQ
}

func asciiCase(lower bool) func(*env, value) (value, error) {
	return func(_ *env, v value) (value, error) {
		if v.k != kStr {
			return vNull, errJQ
		}
		s := v.str()
		from, to := byte('A'), byte('a')
		if !lower {
			from, to = 'a', 'A'
		}
		i := 0
		for i < len(s) && (s[i] < from || s[i] > from+25) {
			i++
		}
		if i == len(s) {
			return v, nil
		}
		b := []byte(s)
		for ; i < len(b); i++ {
			if c := b[i]; c >= from && c <= from+25 {
				b[i] = c - from + to
			}
		}
		return strValue(string(b)), nil
	}
}

func bFirst(e *env, v value) (value, error) { return e.indexAt(v, 0) }
func bLast(e *env, v value) (value, error)  { return e.indexAt(v, -1) }

func bKeys(e *env, v value) (value, error) {
	if v.pruned() {
		return vNull, errBail
	}
	buf := e.getBuf()
	defer e.putBuf(buf)
	switch v.k {
	case kObj:
		ps := e.sortedPairs(v)
		for _, p := range ps {
			buf = append(buf, strValue(p.key))
		}
		e.releasePairs(ps)
	case kArr:
		n := len(e.elems(v, buf))
		buf = buf[:0]
		for i := range n {
			buf = append(buf, intValue(i))
		}
	default:
		return vNull, errJQ
	}
	return e.newArr(buf), nil
}

var entryKeys = []string{"key", "value"}

func entry(e *env, k, v value) value {
	c := e.newObj(2, true)
	copy(c.keys, entryKeys)
	c.vals[0], c.vals[1] = k, v
	return value{k: kObj, c: c}
}

// toEntries is to_entries: [keys[] as $k | {key: $k, value: .[$k]}].
func toEntries(e *env, v value) (value, error) {
	if v.pruned() {
		return vNull, errBail
	}
	buf := e.getBuf()
	defer e.putBuf(buf)
	switch v.k {
	case kObj:
		ps := e.sortedPairs(v)
		for _, p := range ps {
			buf = append(buf, entry(e, strValue(p.key), p.val))
		}
		e.releasePairs(ps)
	case kArr:
		els := e.elems(v, e.getBuf())
		for i, x := range els {
			buf = append(buf, entry(e, intValue(i), x))
		}
		e.putBuf(els)
	default:
		return vNull, errJQ
	}
	return e.newArr(buf), nil
}

func bToEntries(e *env, v value) (value, error) { return toEntries(e, v) }

func bFromEntries(e *env, v value) (value, error) {
	items, err := iterNode{}.eval(e, v, e.getBuf())
	defer e.putBuf(items)
	if err != nil {
		return vNull, err
	}
	return fromEntries(e, items)
}

// has reports whether object v has key (for raw objects, a null member
// counts).
func has(v value, key string) bool {
	if !v.raw() {
		return slices.Contains(v.c.keys, key)
	}
	for i := 1; ; {
		k, _, next, ok := nextMember(v.s, i)
		if !ok {
			return false
		}
		if k == key {
			return true
		}
		i = next
	}
}

// fromEntries is from_entries over the entries ents:
// map({(.key // .Key // .name // .Name): if has("value") then .value else .Value end}) | add // {}.
func fromEntries(e *env, ents []value) (value, error) {
	var ps []pair
	for _, ent := range ents {
		if ent.k != kObj {
			return vNull, errJQ
		}
		if ent.pruned() {
			return vNull, errBail
		}
		var k value
		for _, name := range [...]string{"key", "Key", "name", "Name"} {
			if k = e.member(ent, name); k.truthy() {
				break
			}
		}
		if k.k != kStr {
			return vNull, errJQ
		}
		val := "Value"
		if has(ent, "value") {
			val = "value"
		}
		ps = append(ps, pair{k.str(), e.member(ent, val)})
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return strings.Compare(a.key, b.key) })
	n := 0
	for i := range ps {
		if i+1 < len(ps) && ps[i+1].key == ps[i].key {
			continue // a later entry wins
		}
		ps[n] = ps[i]
		n++
	}
	c := e.newObj(n, true)
	for i, p := range ps[:n] {
		c.keys[i], c.vals[i] = p.key, p.val
	}
	return value{k: kObj, c: c}, nil
}

func strArgs(v, a value) (string, string, error) {
	if v.k != kStr || a.k != kStr {
		return "", "", errJQ
	}
	return v.str(), a.str(), nil
}

func bSplit(e *env, v, a value) (value, error) {
	s, sep, err := strArgs(v, a)
	if err != nil {
		return vNull, err
	}
	buf := e.getBuf()
	defer e.putBuf(buf)
	if s != "" {
		for {
			i := strings.Index(s, sep)
			if i < 0 || sep == "" {
				break
			}
			buf = append(buf, strValue(s[:i]))
			s = s[i+len(sep):]
		}
		if sep == "" {
			for _, r := range s {
				buf = append(buf, strValue(string(r)))
			}
		} else {
			buf = append(buf, strValue(s))
		}
	}
	return e.newArr(buf), nil
}

// bJoin is join(sep) over an array: nulls are empty, numbers and booleans
// their JSON text.
func bJoin(e *env, v, sep value) (value, error) {
	if v.k != kArr {
		if v.k == kObj {
			return vNull, errBail
		}
		return vNull, errJQ
	}
	if v.pruned() {
		return vNull, errBail
	}
	els := e.elems(v, e.getBuf())
	defer e.putBuf(els)
	if len(els) > 1 && sep.k != kStr && sep.k != kNull {
		return vNull, errJQ
	}
	b := e.bytes[:0]
	for i, x := range els {
		if i > 0 && sep.k == kStr {
			b = append(b, sep.str()...)
		}
		switch x.k {
		case kNull:
		case kArr, kObj:
			return vNull, errJQ
		default:
			var err error
			if b, err = appendToString(b, x); err != nil {
				return vNull, err
			}
		}
	}
	e.bytes = b[:0]
	return strValue(e.keep(b)), nil
}

func bLtrimstr(_ *env, v, a value) (value, error) {
	s, t, err := strArgs(v, a)
	if err != nil {
		return vNull, err
	}
	if !strings.HasPrefix(s, t) {
		return v, nil
	}
	return strValue(s[len(t):]), nil
}

func bRtrimstr(_ *env, v, a value) (value, error) {
	s, t, err := strArgs(v, a)
	if err != nil {
		return vNull, err
	}
	if !strings.HasSuffix(s, t) {
		return v, nil
	}
	return strValue(s[:len(s)-len(t)]), nil
}

func bStartswith(_ *env, v, a value) (value, error) {
	s, t, err := strArgs(v, a)
	return boolValue(err == nil && strings.HasPrefix(s, t)), err
}

func bEndswith(_ *env, v, a value) (value, error) {
	s, t, err := strArgs(v, a)
	return boolValue(err == nil && strings.HasSuffix(s, t)), err
}

// testNode is test(re) for a constant re.
type testNode struct{ re *regexp.Regexp }

func (n *testNode) one(_ *env, in value) (value, error) {
	if in.k != kStr {
		return vNull, errJQ
	}
	return boolValue(n.re.MatchString(in.str())), nil
}

func (n *testNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// captureNode is capture(re): the named groups of the first match.
type captureNode struct {
	re     *regexp.Regexp
	names  []string // sorted, unique
	groups []int    // group index per name (the last group of that name)
}

func (n *captureNode) opt(e *env, in value) (value, bool, error) {
	if in.k != kStr {
		return vNull, false, errJQ
	}
	s := in.str()
	m := n.re.FindStringSubmatchIndex(s)
	if m == nil {
		return vNull, false, nil
	}
	c := e.newObj(len(n.names), true)
	copy(c.keys, n.names)
	for i, g := range n.groups {
		if m[2*g] < 0 {
			c.vals[i] = vNull
		} else {
			c.vals[i] = strValue(s[m[2*g]:m[2*g+1]])
		}
	}
	return value{k: kObj, c: c}, true, nil
}

func (n *captureNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

// scanNode is scan(re) for a pattern that cannot match the empty string.
type scanNode struct{ re *regexp.Regexp }

func (n *scanNode) eval(e *env, in value, out []value) ([]value, error) {
	if in.k != kStr {
		return out, errJQ
	}
	s := in.str()
	groups := n.re.NumSubexp()
	for _, m := range n.re.FindAllStringSubmatchIndex(s, -1) {
		if groups == 0 {
			out = append(out, strValue(s[m[0]:m[1]]))
			continue
		}
		buf := e.getBuf()
		for g := 1; g <= groups; g++ {
			if m[2*g] < 0 {
				buf = append(buf, vNull)
			} else {
				buf = append(buf, strValue(s[m[2*g]:m[2*g+1]]))
			}
		}
		out = append(out, e.newArr(buf))
		e.putBuf(buf)
	}
	return out, nil
}

// subNode is sub(re; "literal"): the first match replaced.
type subNode struct {
	re   *regexp.Regexp
	repl string
}

func (n *subNode) one(e *env, in value) (value, error) {
	if in.k != kStr {
		return vNull, errJQ
	}
	s := in.str()
	m := n.re.FindStringIndex(s)
	if m == nil {
		return in, nil
	}
	return strValue(e.concat(s[:m[0]], n.repl, s[m[1]:])), nil
}

func (n *subNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// The program's own helpers (programFunctions), on plan values. They
// mirror toNum, toInt, toISO and nonEmpty exactly; a test holds them to it.

// numOfString is toNum of a string.
func numOfString(x string) value {
	f, ok := parseNumString(x)
	if !ok {
		return vNull
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return intValue(int(f))
	}
	return floatValue(f)
}

func bToNum(_ *env, v value) (value, error) {
	switch v.k {
	case kNum:
		return v, nil
	case kStr:
		return numOfString(v.str()), nil
	}
	return vNull, nil
}

func bToInt(e *env, v value) (value, error) {
	n, _ := bToNum(e, v)
	switch {
	case n.k != kNum:
		return vNull, nil
	case n.isInt():
		return n, nil
	}
	return intValue(int(math.Round(n.float()))), nil
}

func bISO8601(e *env, v value) (value, error) {
	var t time.Time
	switch v.k {
	case kNum:
		if v.isInt() {
			t = fromEpoch(float64(v.int()))
		} else {
			t = fromEpoch(v.float())
		}
	case kStr:
		s := strings.TrimSpace(v.str())
		if mayBeFloat(s) {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				t = fromEpoch(f)
				break
			}
		}
		t = parseLayouts(s)
	}
	if t.IsZero() {
		return vNull, nil
	}
	b := t.UTC().AppendFormat(e.bytes[:0], "2006-01-02T15:04:05.000Z")
	e.bytes = b[:0]
	return strValue(e.keep(b)), nil
}

// mayBeFloat is false when strconv.ParseFloat certainly rejects s: a sign
// elsewhere than first or after an exponent letter, or a character no
// float syntax has.
func mayBeFloat(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+', '-':
			if i > 0 {
				if p := s[i-1] | 0x20; p != 'e' && p != 'p' {
					return false
				}
			}
		case ' ', ':', ',', '/':
			return false
		}
	}
	return true
}

// parseLayouts is toISO's loop over timeLayouts. Every layout starts
// with a four-digit year and "-" at 4 and 7, or with a weekday and "," at
// 3; a string shaped YYYY-MM-DD… can only match the layouts that continue
// as it does, so only those are tried (in the same order, with the same
// result), and a string of neither shape matches none.
func parseLayouts(s string) time.Time {
	layouts := timeLayouts
	switch {
	case len(s) >= 10 && s[4] == '-' && s[7] == '-':
		switch {
		case len(s) == 10:
			layouts = isoDateOnly
		case s[10] == 'T':
			layouts = isoDateT
		case s[10] == ' ':
			layouts = isoDateSpace
		}
	case len(s) < 4 || s[3] != ',':
		return time.Time{}
	}
	for _, l := range layouts {
		if p, err := time.Parse(l, s); err == nil {
			return p
		}
	}
	return time.Time{}
}

// The timeLayouts that a YYYY-MM-DD string of length 10, or followed by
// 'T' or ' ', can match; TestFastPathLayouts keeps them in step.
var (
	isoDateOnly  = []string{"2006-01-02"}
	isoDateT     = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04:05.000Z0700"}
	isoDateSpace = []string{"2006-01-02 15:04:05"}
)

func bNonEmpty(_ *env, v value) (value, error) {
	switch v.k {
	case kStr:
		if v.s == "" || v.raw() && len(v.s) == 2 {
			return vNull, nil
		}
	case kArr, kObj:
		switch {
		case v.pruned():
			return vNull, errBail
		case v.raw():
			if rawEmpty(v.s) {
				return vNull, nil
			}
		case v.k == kArr && len(v.c.arr) == 0, v.k == kObj && len(v.c.keys) == 0:
			return vNull, nil
		}
	}
	return v, nil
}

var fn0s = map[string]func(*env, value) (value, error){
	"type":           bType,
	"not":            bNot,
	"length":         bLength,
	"tostring":       bToString,
	"tonumber":       bToNumber,
	"ascii_downcase": asciiCase(true),
	"ascii_upcase":   asciiCase(false),
	"first":          bFirst,
	"last":           bLast,
	"keys":           bKeys,
	"to_entries":     bToEntries,
	"from_entries":   bFromEntries,
	"toint":          bToInt,
	"tonum":          bToNum,
	"iso8601":        bISO8601,
	"nonempty":       bNonEmpty,
}

var fn1s = map[string]func(*env, value, value) (value, error){
	"split":      bSplit,
	"join":       bJoin,
	"ltrimstr":   bLtrimstr,
	"rtrimstr":   bRtrimstr,
	"startswith": bStartswith,
	"endswith":   bEndswith,
}

func kinds(ks ...kind) *typeNode {
	n := &typeNode{}
	for _, k := range ks {
		n.keep[k] = true
	}
	return n
}

var typeFilters = map[string]*typeNode{
	"objects":   kinds(kObj),
	"arrays":    kinds(kArr),
	"strings":   kinds(kStr),
	"numbers":   kinds(kNum),
	"booleans":  kinds(kFalse, kTrue),
	"nulls":     kinds(kNull),
	"values":    kinds(kFalse, kTrue, kNum, kStr, kArr, kObj),
	"scalars":   kinds(kNull, kFalse, kTrue, kNum, kStr),
	"iterables": kinds(kArr, kObj),
}

// ---------------------------------------------------------------------------
// Compiler: gojq AST to evaluators

type planVar struct {
	name string
	slot int
	site *site
}

// planFunc is a def in scope: its body is compiled at each call, in the
// scope of its definition (jq's lexical scoping).
type planFunc struct {
	def    *gojq.FuncDef
	vars   int // variables visible to the body: scope[:vars]
	funcs  int // functions visible to the body: funcs[:funcs], itself included
	active bool
}

type planCompiler struct {
	scope []planVar
	funcs []*planFunc
	nvars int
}

func (c *planCompiler) lookupFunc(name string, arity int) *planFunc {
	for i := len(c.funcs) - 1; i >= 0; i-- {
		if f := c.funcs[i]; f.def.Name == name && len(f.def.Args) == arity {
			return f
		}
	}
	return nil
}

// call inlines the body of the def f.
func (c *planCompiler) call(f *planFunc, in *site) (node, error) {
	if f.active {
		return nil, unsupported("recursive function " + f.def.Name)
	}
	scope, funcs := c.scope, c.funcs
	c.scope, c.funcs = slices.Clone(scope[:f.vars]), slices.Clone(funcs[:f.funcs])
	f.active = true
	n, err := c.query(f.def.Body, in)
	f.active = false
	c.scope, c.funcs = scope, funcs
	return n, err
}

func (c *planCompiler) lookupVar(name string) *planVar {
	for i := len(c.scope) - 1; i >= 0; i-- {
		if c.scope[i].name == name {
			return &c.scope[i]
		}
	}
	return nil
}

// query compiles q; in is the site of q's input when q reads the same
// input as an enclosing object construction (or the program), else nil.
func (c *planCompiler) query(q *gojq.Query, in *site) (node, error) {
	if q.Meta != nil || len(q.Imports) > 0 {
		return nil, unsupported("modules")
	}
	if len(q.FuncDefs) > 0 {
		mark := len(c.funcs)
		for _, fd := range q.FuncDefs {
			if len(fd.Args) > 0 {
				return nil, unsupported("function definitions with parameters")
			}
			c.funcs = append(c.funcs, &planFunc{def: fd, vars: len(c.scope), funcs: len(c.funcs) + 1})
		}
		defer func() { c.funcs = c.funcs[:mark] }()
		body := *q
		body.FuncDefs = nil
		q = &body
	}
	if q.Term != nil {
		return c.term(q.Term, in)
	}
	if q.Op == gojq.OpPipe && len(q.Patterns) > 0 {
		return c.bind(q, in)
	}
	if q.Left == nil || q.Right == nil {
		return nil, unsupported("empty query")
	}
	if q.Op == gojq.OpAssign {
		return c.assign(q, in)
	}
	rin := in
	if q.Op == gojq.OpPipe {
		rin = nil
	}
	if q.Op == gojq.OpEq || q.Op == gojq.OpNe {
		if n, ok, err := c.equality(q, in); ok || err != nil {
			return n, err
		}
	}
	l, err := c.query(q.Left, in)
	if err != nil {
		return nil, err
	}
	r, err := c.query(q.Right, rin)
	if err != nil {
		return nil, err
	}
	switch q.Op {
	case gojq.OpPipe:
		return mkPipe(l, r), nil
	case gojq.OpComma:
		return &commaNode{l, r}, nil
	case gojq.OpAlt:
		return mkAlt(l, r), nil
	case gojq.OpAnd, gojq.OpOr:
		lo, lok := asOne(l)
		ro, rok := asOne(r)
		if lok && rok {
			return &and1Node{lo, ro, q.Op == gojq.OpOr}, nil
		}
		return &andNode{l, r, q.Op == gojq.OpOr}, nil
	}
	op := map[gojq.Operator]binop{
		gojq.OpAdd: opAdd,
		gojq.OpSub: opSub,
		gojq.OpMul: opMul,
		gojq.OpDiv: opDiv,
		gojq.OpMod: opMod,
		gojq.OpEq:  cmpOp(func(c int) bool { return c == 0 }),
		gojq.OpNe:  cmpOp(func(c int) bool { return c != 0 }),
		gojq.OpLt:  cmpOp(func(c int) bool { return c < 0 }),
		gojq.OpLe:  cmpOp(func(c int) bool { return c <= 0 }),
		gojq.OpGt:  cmpOp(func(c int) bool { return c > 0 }),
		gojq.OpGe:  cmpOp(func(c int) bool { return c >= 0 }),
	}[q.Op]
	if op == nil {
		return nil, unsupported("operator " + q.Op.String())
	}
	return mkBin(op, l, r), nil
}

// equality compiles type == "name" and x == constant (and !=) to
// specialized nodes; ok is false for other comparisons.
func (c *planCompiler) equality(q *gojq.Query, in *site) (node, bool, error) {
	neg := q.Op == gojq.OpNe
	l, r := q.Left, q.Right
	if isConstScalar(l) && !isConstScalar(r) {
		l, r = r, l
	}
	if !isConstScalar(r) {
		return nil, false, nil
	}
	cn, err := c.query(r, in)
	if err != nil {
		return nil, false, err
	}
	k := cn.(*constNode).v
	if t := l.Term; t != nil && t.Type == gojq.TermTypeFunc && t.Func.Name == "type" && len(t.Func.Args) == 0 &&
		len(t.SuffixList) == 0 && c.lookupFunc("type", 0) == nil && k.k == kStr {
		n := &typeIsNode{neg: neg}
		for i, name := range kindNames {
			n.kinds[i] = name == k.s
		}
		return n, true, nil
	}
	x, err := c.query(l, in)
	if err != nil {
		return nil, false, err
	}
	xo, ok := asOne(x)
	if !ok {
		return nil, false, nil
	}
	return &eqConstNode{xo, k, neg}, true, nil
}

// isConstScalar: q is a null, boolean, number or plain string literal.
func isConstScalar(q *gojq.Query) bool {
	t := q.Term
	if t == nil || len(t.SuffixList) > 0 {
		return false
	}
	switch t.Type {
	case gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber:
		return true
	case gojq.TermTypeString:
		return t.Str.Queries == nil
	}
	return false
}

func (c *planCompiler) bind(q *gojq.Query, in *site) (node, error) {
	if len(q.Patterns) != 1 || q.Patterns[0].Name == "" {
		return nil, unsupported("destructuring patterns")
	}
	src, err := c.query(q.Left, in)
	if err != nil {
		return nil, err
	}
	slot := c.nvars
	c.nvars++
	vs := &site{keys: map[string]int{}}
	c.scope = append(c.scope, planVar{name: q.Patterns[0].Name, slot: slot, site: vs})
	body, err := c.query(q.Right, in)
	c.scope = c.scope[:len(c.scope)-1]
	if err != nil {
		return nil, err
	}
	b := bindNode{src: src, body: body, slot: slot, site: vs}
	so, sok := asOne(src)
	bo, bok := asOne(body)
	if sok && bok {
		return &bind1Node{so, bo, b}, nil
	}
	if bp, ok := asOpt(body); sok && ok {
		return &bindOptNode{so, bp, b}, nil
	}
	return &b, nil
}

func (c *planCompiler) assign(q *gojq.Query, in *site) (node, error) {
	t := q.Left.Term
	if t == nil || t.Type != gojq.TermTypeIndex || len(t.SuffixList) > 0 {
		return nil, unsupported("assignment to a path other than .key")
	}
	key, ok := indexKey(t.Index)
	k, isStr := key.(string)
	if !ok || !isStr {
		return nil, unsupported("assignment to a path other than .key")
	}
	rhs, err := c.query(q.Right, in)
	if err != nil {
		return nil, err
	}
	return &assignNode{key: k, rhs: rhs}, nil
}

func (c *planCompiler) term(t *gojq.Term, in *site) (node, error) {
	if n := len(t.SuffixList); n > 0 {
		base := *t
		base.SuffixList = t.SuffixList[:n-1]
		return c.suffix(&base, t.SuffixList[n-1], in)
	}
	switch t.Type {
	case gojq.TermTypeIdentity:
		return identNode{}, nil
	case gojq.TermTypeNull:
		return &constNode{vNull}, nil
	case gojq.TermTypeTrue:
		return &constNode{vTrue}, nil
	case gojq.TermTypeFalse:
		return &constNode{vFalse}, nil
	case gojq.TermTypeIndex:
		return c.index(&gojq.Term{Type: gojq.TermTypeIdentity}, t.Index, in)
	case gojq.TermTypeFunc:
		return c.fn(t.Func, in)
	case gojq.TermTypeObject:
		return c.object(t.Object, in)
	case gojq.TermTypeArray:
		if t.Array.Query == nil {
			return &constNode{value{k: kArr, c: &comp{}}}, nil
		}
		body, err := c.query(t.Array.Query, in)
		if err != nil {
			return nil, err
		}
		if vs, ok := constValues(body); ok {
			return &constNode{value{k: kArr, c: &comp{arr: vs}}}, nil
		}
		return &arrayNode{body}, nil
	case gojq.TermTypeNumber:
		v, err := numberConst(t.Number)
		if err != nil {
			return nil, err
		}
		return &constNode{v}, nil
	case gojq.TermTypeUnary:
		if t.Unary.Op != gojq.OpSub {
			return nil, unsupported("unary +")
		}
		x, err := c.term(t.Unary.Term, in)
		if err != nil {
			return nil, err
		}
		if k, ok := x.(*constNode); ok && k.v.k == kNum {
			v, err := negate(k.v)
			if err != nil {
				return nil, unsupported("number literal")
			}
			return &constNode{v}, nil
		}
		return &negNode{x}, nil
	case gojq.TermTypeString:
		return c.str(t.Str, in)
	case gojq.TermTypeIf:
		return c.ifq(t.If, in)
	case gojq.TermTypeTry:
		if t.Try.Catch != nil {
			return nil, unsupported("try … catch")
		}
		body, err := c.query(t.Try.Body, in)
		if err != nil {
			return nil, err
		}
		return mkTry(body), nil
	case gojq.TermTypeQuery:
		return c.query(t.Query, in)
	case gojq.TermTypeRecurse:
		return nil, unsupported("recursion (..) outside del(.. | nulls)")
	case gojq.TermTypeFormat:
		return nil, unsupported("formats (@…)")
	case gojq.TermTypeReduce:
		return nil, unsupported("reduce")
	case gojq.TermTypeForeach:
		return nil, unsupported("foreach")
	case gojq.TermTypeLabel, gojq.TermTypeBreak:
		return nil, unsupported("label/break")
	}
	return nil, unsupported("term " + t.String())
}

// suffix compiles base followed by s, as gojq's compileTermSuffix does: x?
// wraps only the last suffix (or the whole term) in try.
func (c *planCompiler) suffix(base *gojq.Term, s *gojq.Suffix, in *site) (node, error) {
	switch {
	case s.Index != nil:
		return c.index(base, s.Index, in)
	case s.Iter:
		b, err := c.term(base, in)
		if err != nil {
			return nil, err
		}
		return mkPipe(b, iterNode{}), nil
	case s.Optional:
		if n := len(base.SuffixList); n > 0 {
			var u *gojq.Term
			switch last := base.SuffixList[n-1]; {
			case last.Index != nil:
				u = &gojq.Term{Type: gojq.TermTypeIndex, Index: last.Index}
			case last.Iter:
				u = &gojq.Term{Type: gojq.TermTypeIdentity, SuffixList: []*gojq.Suffix{{Iter: true}}}
			}
			if u != nil {
				pre := *base
				pre.SuffixList = base.SuffixList[:n-1]
				b, err := c.term(&pre, in)
				if err != nil {
					return nil, err
				}
				body, err := c.term(u, nil)
				if err != nil {
					return nil, err
				}
				return mkPipe(b, mkTry(body)), nil
			}
		}
		body, err := c.term(base, in)
		if err != nil {
			return nil, err
		}
		return mkTry(body), nil
	}
	return nil, unsupported("suffix " + s.String())
}

func mkTry(body node) node {
	if b, ok := asOpt(body); ok {
		return &tryOptNode{b}
	}
	return &tryNode{body}
}

// indexKey is the constant key of x (gojq's toIndexKey): a string or an
// int.
func indexKey(x *gojq.Index) (any, bool) {
	switch {
	case x.Name != "":
		return x.Name, true
	case x.Str != nil:
		if x.Str.Queries == nil {
			return x.Str.Str, true
		}
		return nil, false
	case x.IsSlice || x.Start == nil || x.Start.Term == nil:
		return nil, false
	}
	t := x.Start.Term
	if len(t.SuffixList) > 0 {
		return nil, false
	}
	var num string
	neg := false
	switch t.Type {
	case gojq.TermTypeString:
		if t.Str.Queries == nil {
			return t.Str.Str, true
		}
		return nil, false
	case gojq.TermTypeNumber:
		num = t.Number
	case gojq.TermTypeUnary:
		if t.Unary.Op != gojq.OpSub || t.Unary.Term.Type != gojq.TermTypeNumber || len(t.Unary.Term.SuffixList) > 0 {
			return nil, false
		}
		num, neg = t.Unary.Term.Number, true
	default:
		return nil, false
	}
	v, err := numberConst(num)
	if err != nil {
		return nil, false
	}
	i := 0
	if v.isInt() {
		i = v.int()
		if neg {
			if i == math.MinInt {
				return nil, false
			}
			i = -i
		}
	} else {
		f := v.float()
		if neg {
			f = -f
		}
		i = floatToInt(f)
	}
	return i, true
}

func (c *planCompiler) index(base *gojq.Term, x *gojq.Index, in *site) (node, error) {
	if x.IsSlice {
		return nil, unsupported("slices")
	}
	b, err := c.term(base, in)
	if err != nil {
		return nil, err
	}
	if key, ok := indexKey(x); ok {
		switch k := key.(type) {
		case string:
			f := &fieldNode{key: k}
			if base.Type == gojq.TermTypeIdentity && len(base.SuffixList) == 0 && in != nil {
				f.site, f.slot = in, in.slot(k)
			} else if base.Type == gojq.TermTypeFunc && len(base.SuffixList) == 0 && len(base.Func.Args) == 0 {
				if v := c.lookupVar(base.Func.Name); v != nil {
					f.site, f.slot = v.site, v.site.slot(k)
				}
			}
			return mkPipe(b, f), nil
		case int:
			return mkPipe(b, &indexNode{k}), nil
		}
	}
	if x.Str != nil {
		return nil, unsupported("interpolated index")
	}
	k, err := c.query(x.Start, in)
	if err != nil {
		return nil, err
	}
	bo, bok := asOne(b)
	ko, kok := asOne(k)
	if bok && kok {
		return &indexDyn1Node{bo, ko}, nil
	}
	return &indexDynNode{b, k}, nil
}

func numberConst(s string) (value, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return intValue(int(i)), nil
	}
	if strings.ContainsAny(s, ".eE") {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatValue(f), nil
		}
	}
	return vNull, unsupported("number literal " + s)
}

// constString is the value of q when q is a plain string literal.
func constString(q *gojq.Query) (string, bool) {
	if q.Term == nil || q.Term.Type != gojq.TermTypeString || len(q.Term.SuffixList) > 0 || q.Term.Str.Queries != nil {
		return "", false
	}
	return q.Term.Str.Str, true
}

// constValues is the outputs of n when n is made of constants.
func constValues(n node) ([]value, bool) {
	switch n := n.(type) {
	case *constNode:
		return []value{n.v}, true
	case emptyNode:
		return nil, true
	case *commaNode:
		l, ok := constValues(n.l)
		if !ok {
			return nil, false
		}
		r, ok := constValues(n.r)
		return append(l, r...), ok
	}
	return nil, false
}

func (c *planCompiler) str(s *gojq.String, in *site) (node, error) {
	if s.Queries == nil {
		return &constNode{strValue(s.Str)}, nil
	}
	var parts []node
	for _, q := range s.Queries {
		n, err := c.query(q, in)
		if err != nil {
			return nil, err
		}
		if q.Term == nil || q.Term.Str == nil {
			n = mkPipe(n, &fn0Node{bToString})
		}
		parts = append(parts, n)
	}
	ones := make([]oner, 0, len(parts))
	for _, p := range parts {
		if o, ok := asOne(p); ok {
			ones = append(ones, o)
		}
	}
	if len(ones) == len(parts) {
		return &interpNode{ones}, nil
	}
	n := parts[0]
	for _, p := range parts[1:] {
		n = mkBin(opAdd, n, p)
	}
	return n, nil
}

func (c *planCompiler) ifq(x *gojq.If, in *site) (node, error) {
	cond, err := c.query(x.Cond, in)
	if err != nil {
		return nil, err
	}
	then, err := c.query(x.Then, in)
	if err != nil {
		return nil, err
	}
	var els node = identNode{}
	switch {
	case len(x.Elif) > 0:
		els, err = c.ifq(&gojq.If{Cond: x.Elif[0].Cond, Then: x.Elif[0].Then, Elif: x.Elif[1:], Else: x.Else}, in)
	case x.Else != nil:
		els, err = c.query(x.Else, in)
	}
	if err != nil {
		return nil, err
	}
	if t, ok := cond.(*typeIsNode); ok {
		return mkTypeSwitch(t, then, els), nil
	}
	co, cok := asOne(cond)
	to, tok := asOne(then)
	eo, eok := asOne(els)
	if cok && tok && eok {
		return &if1Node{co, to, eo}, nil
	}
	tp, tok := asOpt(then)
	ep, eok := asOpt(els)
	if cok && tok && eok {
		return &ifOptNode{co, tp, ep}, nil
	}
	return &ifNode{cond, then, els}, nil
}

func (c *planCompiler) object(o *gojq.Object, in *site) (node, error) {
	if len(o.KeyVals) == 0 {
		return &constNode{value{k: kObj, c: &comp{sorted: true}}}, nil
	}
	s, own := in, in == nil
	if own {
		s = &site{keys: map[string]int{}}
	}
	keys := make([]string, len(o.KeyVals))
	vals := make([]node, len(o.KeyVals))
	for i, kv := range o.KeyVals {
		var err error
		switch {
		case kv.Key != "" && kv.Key[0] == '$':
			if kv.Val != nil {
				return nil, unsupported("object keys from variables")
			}
			v := c.lookupVar(kv.Key)
			if v == nil {
				return nil, unsupported("variable " + kv.Key)
			}
			keys[i], vals[i] = kv.Key[1:], &varNode{v.slot}
			continue
		case kv.Key != "":
			keys[i] = kv.Key
		case kv.KeyString != nil && kv.KeyString.Queries == nil:
			keys[i] = kv.KeyString.Str
		default:
			return nil, unsupported("computed object keys")
		}
		if kv.Val == nil {
			vals[i] = &fieldNode{key: keys[i], site: s, slot: s.slot(keys[i])}
			continue
		}
		if vals[i], err = c.query(kv.Val, s); err != nil {
			return nil, err
		}
	}
	var sorted []string
	last := map[string]int{}
	for i, k := range keys {
		if _, dup := last[k]; !dup {
			sorted = append(sorted, k)
		}
		last[k] = i
	}
	slices.Sort(sorted)
	slot := make([]int, len(keys))
	consts := true
	var ones []oner
	for i, k := range keys {
		slot[i] = -1
		if last[k] == i {
			slot[i], _ = slices.BinarySearch(sorted, k)
		}
		if o, ok := asOne(vals[i]); ok {
			ones = append(ones, o)
		}
		if _, ok := vals[i].(*constNode); !ok {
			consts = false
		}
	}
	if consts {
		cv := &comp{keys: sorted, vals: make([]value, len(sorted)), sorted: true}
		for i, v := range vals {
			if s := slot[i]; s >= 0 {
				cv.vals[s] = v.(*constNode).v
			}
		}
		return &constNode{value{k: kObj, c: cv}}, nil
	}
	if !own || s.reads < indexThreshold {
		s = nil
	}
	if len(ones) == len(vals) {
		n := &objectNode{keys: sorted, vals: ones, slot: slot, site: s, fields: make([]*fieldPipeNode, len(ones)), inSite: in}
		if own {
			n.inSite = n.site
		}
		for j, v := range ones {
			if f, ok := v.(*fieldPipeNode); ok && n.inSite != nil && f.f.site == n.inSite {
				n.fields[j] = f
			}
		}
		return n, nil
	}
	opts := make([]opter, 0, len(vals))
	for _, v := range vals {
		if o, ok := asOpt(v); ok {
			opts = append(opts, o)
		}
	}
	if len(opts) == len(vals) {
		return &objectOptNode{keys: sorted, vals: opts, slot: slot, site: s}, nil
	}
	return &objectsNode{keys: sorted, vals: vals, slot: slot, site: s}, nil
}

func (c *planCompiler) fn(f *gojq.Func, in *site) (node, error) {
	name, args := f.Name, f.Args
	if strings.HasPrefix(name, "$") {
		if v := c.lookupVar(name); v != nil && len(args) == 0 {
			return &varNode{v.slot}, nil
		}
		return nil, unsupported("variable " + name)
	}
	if def := c.lookupFunc(name, len(args)); def != nil {
		return c.call(def, in)
	}
	switch len(args) {
	case 0:
		if name == "empty" {
			return emptyNode{}, nil
		}
		if t, ok := typeFilters[name]; ok {
			return t, nil
		}
		if b, ok := fn0s[name]; ok {
			return &fn0Node{b}, nil
		}
	case 1:
		switch name {
		case "select":
			cond, err := c.query(args[0], in)
			if err != nil {
				return nil, err
			}
			if c, ok := asOne(cond); ok {
				return &selectOptNode{c}, nil
			}
			return &selectNode{cond}, nil
		case "map", "with_entries":
			g, err := c.query(args[0], nil)
			if err != nil {
				return nil, err
			}
			if name == "map" {
				return &mapNode{g}, nil
			}
			return &withEntriesNode{g}, nil
		case "del":
			if q := args[0]; q.Op == gojq.OpPipe && len(q.Patterns) == 0 &&
				q.Left.Term != nil && q.Left.Term.Type == gojq.TermTypeRecurse && len(q.Left.Term.SuffixList) == 0 &&
				q.Right.Term != nil && q.Right.Term.Type == gojq.TermTypeFunc && len(q.Right.Term.SuffixList) == 0 &&
				q.Right.Term.Func.Name == "nulls" && len(q.Right.Term.Func.Args) == 0 {
				return pruneNode{}, nil
			}
			return nil, unsupported("del(f) other than del(.. | nulls)")
		case "test", "capture", "scan":
			pat, ok := constString(args[0])
			if !ok {
				return nil, unsupported(name + " with a computed pattern")
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, unsupported("invalid regular expression " + strconv.Quote(pat))
			}
			switch name {
			case "test":
				return &testNode{re}, nil
			case "scan":
				if !nonEmptyMatches(pat) {
					return nil, unsupported("scan with a pattern that can match the empty string")
				}
				return &scanNode{re}, nil
			}
			n := &captureNode{re: re}
			at := map[string]int{}
			for g, nm := range re.SubexpNames() {
				if nm != "" {
					at[nm] = g
				}
			}
			for nm := range at {
				n.names = append(n.names, nm)
			}
			slices.Sort(n.names)
			for _, nm := range n.names {
				n.groups = append(n.groups, at[nm])
			}
			return n, nil
		}
		if b, ok := fn1s[name]; ok {
			arg, err := c.query(args[0], in)
			if err != nil {
				return nil, err
			}
			if a, ok := asOne(arg); ok {
				return &fn11Node{a, b}, nil
			}
			return &fn1Node{arg, b}, nil
		}
	case 2:
		if name == "sub" {
			pat, ok1 := constString(args[0])
			repl, ok2 := constString(args[1])
			if !ok1 || !ok2 {
				return nil, unsupported("sub with a computed pattern or replacement")
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, unsupported("invalid regular expression " + strconv.Quote(pat))
			}
			return &subNode{re, repl}, nil
		}
	}
	return nil, unsupported("function " + name + "/" + strconv.Itoa(len(args)))
}

// nonEmptyMatches reports whether every match of pat is at least one
// character long.
func nonEmptyMatches(pat string) bool {
	r, err := syntax.Parse(pat, syntax.Perl)
	if err != nil {
		return false
	}
	var minLen func(r *syntax.Regexp) int
	minLen = func(r *syntax.Regexp) int {
		switch r.Op {
		case syntax.OpLiteral:
			return len(r.Rune)
		case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			return 1
		case syntax.OpCapture, syntax.OpPlus:
			return minLen(r.Sub[0])
		case syntax.OpRepeat:
			return r.Min * minLen(r.Sub[0])
		case syntax.OpConcat:
			n := 0
			for _, s := range r.Sub {
				n += minLen(s)
			}
			return n
		case syntax.OpAlternate:
			n := math.MaxInt
			for _, s := range r.Sub {
				n = min(n, minLen(s))
			}
			return n
		}
		return 0
	}
	return minLen(r.Simplify()) > 0
}

// fastPathPanics counts runs the plan abandoned on a panic (a bug: the
// item still went to gojq). Tests require it to stay zero.
var fastPathPanics atomic.Uint64
