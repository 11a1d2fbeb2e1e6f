package normalize

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/itchyny/gojq"

	"socialrouter/internal/jsonscan"
)

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
	root    node
	rootOpt opter // root, when it has at most one output
	// emit writes the record while it evaluates root (emit.go); nil
	// when root's shape has no emitter.
	emit     emitter
	rootSite *site
	// markers are the root site's slots of ErrorMarkers: the root
	// object's one indexing pass also tells an error row (IsErrorItem),
	// where a search of the whole item for the markers' names took an
	// eighth of a normalize (issue 38).
	markers []int
	nvars   int
	envs    sync.Pool
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
	for _, m := range ErrorMarkers {
		pl.markers = append(pl.markers, rootSite.index(m))
	}
	pl.rootOpt, _ = asOpt(n)
	pl.emit = recordEmitter(n)
	pl.envs.New = func() any { return &env{vars: make([]value, pl.nvars), lastRead: -1} }
	return pl, ""
}

// normalize runs the plan over one raw item, with NormalizeItem's contract;
// checked says the caller has validated it with jsonscan's strict check. errBail (for
// every failure) sends the item to gojq.
func (pl *plan) normalize(dst, item []byte, members []jsonscan.Member, input, now string, checked bool) ([]byte, bool, error) {
	out, ok, err := pl.runIndexed(dst, item, members, input, now, checked)
	if err != nil {
		return dst, false, errBail
	}
	return out, ok, nil
}

// run is normalize with the cause of a failure: errJQ (the program raised
// an error), errBail (outside the plan) or errPanic. The record is written
// straight after dst's bytes and out is dst with it (dst itself when there
// is none); a nil dst gets a fresh slice of the record alone, written in
// the env's buffer first.
func (pl *plan) run(dst, item []byte, input, now string, checked bool) (out []byte, ok bool, err error) {
	return pl.runIndexed(dst, item, nil, input, now, checked)
}

// runIndexed is run with the item's own members as its checker located
// them (nil: unknown): the root object's index is made of them.
func (pl *plan) runIndexed(dst, item []byte, members []jsonscan.Member, input, now string, checked bool) (out []byte, ok bool, err error) {
	if len(item) == 0 || len(item) > math.MaxInt32 {
		return dst, false, errBail
	}
	// The item is read in place; nothing derived from it outlives this
	// call (the record is a copy and the env is cleared before reuse).
	src := unsafe.String(&item[0], len(item))
	e := pl.envs.Get().(*env)
	defer func() {
		if r := recover(); r != nil {
			fastPathPanics.Add(1)
			out, ok, err = dst, false, errPanic
		}
		e.reset()
		pl.envs.Put(e)
	}()
	// The plan reads the item in place and trusts its syntax: it must be
	// what jsonscan's strict check accepts, checked here unless the caller did.
	if !checked && !e.check.Valid(src) {
		return dst, false, errBail
	}
	e.src = src
	e.vars[0], e.vars[1] = strValue(input), strValue(now)
	root := rawValue(jsonscan.TrimSpace(src))
	if root.k == kObj {
		if members != nil && src[0] == '{' {
			e.indexRoot(members)
		}
		e.pushFrame(pl.rootSite, root.s)
		if pl.errorRow(e) {
			return dst, false, nil
		}
	}
	buf := dst
	if dst == nil {
		buf = e.out[:0]
	}
	if pl.emit != nil {
		w, st, err := pl.emit.emit(e, root, buf, false)
		if err != nil || st != emitWrote {
			return dst, false, err
		}
		return pl.done(e, dst, w), true, nil
	}
	var rv value
	if pl.rootOpt != nil {
		v, found, err := pl.rootOpt.opt(e, root)
		if err != nil {
			return dst, false, err
		}
		if found {
			rv = v
		}
	} else {
		outs, err := pl.root.eval(e, root, e.getBuf())
		if err != nil {
			return dst, false, err
		}
		if len(outs) > 0 {
			rv = outs[0]
		}
	}
	if rv.k == kNull {
		return dst, false, nil
	}
	if rv.k != kObj {
		return dst, false, errBail
	}
	w, err := e.writeTop(buf, rv)
	if err != nil {
		return dst, false, err
	}
	return pl.done(e, dst, w), true, nil
}

// done is run's result once the record is written in w: dst followed by
// it (w itself), or for a nil dst a copy of the record, w being the env's
// buffer, kept for the next item.
func (pl *plan) done(e *env, dst, w []byte) []byte {
	if dst != nil {
		return w
	}
	e.out = w
	return append([]byte(nil), w...)
}

// errorRow is IsErrorItem of the root object, read from its frame (the
// last pushed): a marker present with a value other than null.
func (pl *plan) errorRow(e *env) bool {
	slots := e.frames[len(e.frames)-1].slots
	for _, m := range pl.markers {
		if sp := slots[m]; sp.end != 0 && e.src[sp.start:sp.end] != "null" {
			return true
		}
	}
	return false
}

// fastPathPanics counts runs the plan abandoned on a panic (a bug: the
// item still went to gojq). Tests require it to stay zero.
var fastPathPanics atomic.Uint64
