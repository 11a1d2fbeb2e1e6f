package normalize

// Emitters: the record written while it is evaluated (issue 38).
//
// The plan evaluated the record into built values (an object per record
// and per array element, the arrays copied into the env's arenas), then
// the writer walked them to write the record: every member was stored,
// with a write barrier per pointer while the collector ran, and read back.
// An emitter evaluates the nodes on the record's own path (the record
// object, the if/as around it, its del(.. | nulls), its arrays of
// objects) straight into the output, member by member in key order; the
// values inside them (a field and its guard, …) are still evaluated by
// their nodes and written as before.
//
// Order: jq evaluates an object's values in declaration order, the record
// writes them in key order. An emitter evaluates them in key order, which
// differs only in which error comes first; it is only made for the
// record's path, where no try is, so every error ends the run and sends
// the item to gojq whichever it was.

// emitState is what an emitter's node gave for its input.
type emitState uint8

const (
	emitNone  emitState = iota // no output (empty), nothing written
	emitNull                   // null: nothing written, the caller writes it or leaves the member out
	emitWrote                  // the output's JSON written
)

// emitter writes the output of a node for in as write(b, v, prune) writes
// the value v it would have computed.
type emitter interface {
	emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error)
}

// emitValue writes v, or reports it null.
func (e *env) emitValue(b []byte, v value, prune bool) ([]byte, emitState, error) {
	if v.k == kNull {
		return b, emitNull, nil
	}
	b, err := e.write(b, v, prune)
	return b, emitWrote, err
}

// recordEmitter is the emitter of a plan's root, or nil when the root's
// every output is not an object an emitter writes (the plan then builds
// the record and writes it).
func recordEmitter(n node) emitter {
	return mkEmitter(n, true)
}

// mkEmitter is n's emitter; top: n's outputs are the record, which must
// then be objects (or none), written without their null members. For a
// value inside the record it falls back to the node itself; for the
// record, to nil.
func mkEmitter(n node, top bool) emitter {
	switch x := n.(type) {
	case optOne:
		return mkEmitter(x.oner, top)
	case emptyNode:
		return emitEmpty{}
	case *objectNode:
		if m := mkEmitObject(x, top); m != nil {
			return m
		}
	case *fieldPipeNode:
		if !top && nonEmptyGuard(x.r) {
			return &emitStr{&x.f, x.r}
		}
	case *pipe1Node:
		if !top && nonEmptyGuard(x.r) {
			return &emitStr{x.l, x.r}
		}
		if _, ok := x.r.(pruneNode); ok {
			if l := mkEmitter(x.l, top); l != nil {
				return &emitPrune{l}
			}
		}
		if f, ok := x.r.(*fn0Node); ok && f.name == "nonempty" && !top {
			if a, ok := x.l.(*arrayNode); ok {
				if m := mkEmitArray(a, true); m != nil {
					return m
				}
			}
		}
	case *arrayNode:
		if !top {
			if m := mkEmitArray(x, false); m != nil {
				return m
			}
		}
	case *bind1Node:
		if body := mkEmitter(x.body, top); body != nil {
			return &emitBind{src: x.src, b: &x.b, body: body}
		}
	case *bindOptNode:
		if body := mkEmitter(x.body, top); body != nil {
			return &emitBind{src: x.src, b: &x.b, body: body}
		}
	case *ifOptNode:
		then, els := mkEmitter(x.then, top), mkEmitter(x.els, top)
		if then != nil && els != nil {
			return &emitIf{cond: x.cond, then: then, els: els}
		}
	case *typeSwitchOptNode:
		if top {
			m := &emitTypeSwitch{}
			for k, b := range x.branch {
				if m.branch[k] = mkEmitter(b, top); m.branch[k] == nil {
					return nil
				}
			}
			return m
		}
	}
	if top {
		return nil
	}
	if o, ok := asOne(n); ok {
		return emitOne{o}
	}
	if o, ok := asOpt(n); ok {
		return emitOpt{o}
	}
	return nil
}

type emitEmpty struct{}

func (emitEmpty) emit(_ *env, _ value, b []byte, _ bool) ([]byte, emitState, error) {
	return b, emitNone, nil
}

// emitOne and emitOpt write the output of a node that is not emitted.
type emitOne struct{ n oner }

func (m emitOne) emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error) {
	v, err := m.n.one(e, in)
	if err != nil {
		return b, emitNone, err
	}
	return e.emitValue(b, v, prune)
}

type emitOpt struct{ n opter }

func (m emitOpt) emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error) {
	v, ok, err := m.n.opt(e, in)
	if err != nil || !ok {
		return b, emitNone, err
	}
	return e.emitValue(b, v, prune)
}

// emitStr is l | str (the prelude's guard, nonEmptyGuard): a string l
// gives is written as it is, or left out when it is "", without the
// guard's calls; other values go through it.
type emitStr struct{ l, str oner }

func (m *emitStr) emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error) {
	v, err := m.l.one(e, in)
	if err != nil {
		return b, emitNone, err
	}
	switch {
	case v.k != kStr:
		if v, err = m.str.one(e, v); err != nil {
			return b, emitNone, err
		}
		return e.emitValue(b, v, prune)
	case v.raw():
		if len(v.s) == 2 {
			return b, emitNull, nil
		}
		return appendRawString(b, v.s[1:len(v.s)-1]), emitWrote, nil
	case v.s == "":
		return b, emitNull, nil
	}
	return appendJSONString(b, v.s), emitWrote, nil
}

// emitPrune is x | del(.. | nulls).
type emitPrune struct{ x emitter }

func (m *emitPrune) emit(e *env, in value, b []byte, _ bool) ([]byte, emitState, error) {
	return m.x.emit(e, in, b, true)
}

// emitBind is src as $var | body (bind1Node, bindOptNode).
type emitBind struct {
	src  oner
	b    *bindNode
	body emitter
}

func (m *emitBind) emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error) {
	pushed, err := m.b.bindOne(e, m.src, in)
	if pushed {
		defer e.popFrame()
	}
	if err != nil {
		return b, emitNone, err
	}
	return m.body.emit(e, in, b, prune)
}

// emitIf is ifOptNode.
type emitIf struct {
	cond      oner
	then, els emitter
}

func (m *emitIf) emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error) {
	v, err := m.cond.one(e, in)
	if err != nil {
		return b, emitNone, err
	}
	if v.truthy() {
		return m.then.emit(e, in, b, prune)
	}
	return m.els.emit(e, in, b, prune)
}

// emitTypeSwitch is typeSwitchOptNode (if type == "object" then … else
// empty end) for the record.
type emitTypeSwitch struct{ branch [kObj + 1]emitter }

func (m *emitTypeSwitch) emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error) {
	return m.branch[in.k].emit(e, in, b, prune)
}

// emitObject is objectNode written member by member in key order.
type emitObject struct {
	n      *objectNode
	vals   []emitter        // by key
	fields []*fieldPipeNode // by key: n.fields
	// nonEmpty[j]: fields[j] is .key | str, the prelude's guard, whose
	// string branch is if . == "" then null else . end: a raw string of
	// the item is written as it is read, without the guard's calls.
	nonEmpty []bool
	top      bool // the record: its null members left out
}

// mkEmitObject is nil when a key is declared twice (objectNode evaluates
// the value it overrides, which may fail).
func mkEmitObject(n *objectNode, top bool) *emitObject {
	m := &emitObject{n: n, vals: make([]emitter, len(n.keys)), fields: make([]*fieldPipeNode, len(n.keys)),
		nonEmpty: make([]bool, len(n.keys)), top: top}
	for j, x := range n.vals {
		s := n.slot[j]
		if s < 0 {
			return nil
		}
		m.vals[s] = mkEmitter(x, false)
		m.fields[s] = n.fields[j]
		if f := n.fields[j]; f != nil {
			m.nonEmpty[s] = nonEmptyGuard(f.r)
		}
	}
	return m
}

// nonEmptyGuard reports whether r, for a string, is if . == "" then null
// else . end.
func nonEmptyGuard(r oner) bool {
	t, ok := r.(*typeSwitch1Node)
	if !ok || t.eq[kStr] == nil {
		return false
	}
	q := t.eq[kStr]
	return q.empty && !q.cond.neg && q.thenV != nil && q.thenV.k == kNull && q.elsV == nil
}

func (m *emitObject) emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error) {
	n := m.n
	slots, pushed := n.enter(e, in)
	if pushed {
		defer e.popFrame()
	}
	skipNull := prune || m.top
	b = append(b, '{')
	open := len(b)
	for j, x := range m.vals {
		mark := len(b)
		if len(b) != open {
			b = append(b, ',')
		}
		b = append(b, n.quoted[j]...)
		var st emitState
		var err error
		if f := m.fields[j]; f != nil && slots != nil {
			v := vNull
			sp := slots[f.f.slot]
			if sp.end != 0 {
				v = rawValue(e.src[sp.start:sp.end])
			}
			switch {
			case v.k == kStr && m.nonEmpty[j]:
				st = emitNull
				if len(v.s) > 2 {
					b, st = appendRawString(b, v.s[1:len(v.s)-1]), emitWrote
				}
			case v.k == kNull && f.onNull != nil:
				b, st, err = e.emitValue(b, *f.onNull, prune)
			default:
				if v, err = f.r.one(e, v); err != nil {
					return b, emitNone, err
				}
				b, st, err = e.emitValue(b, v, prune)
			}
		} else {
			b, st, err = x.emit(e, in, b, prune)
		}
		if err != nil {
			return b, emitNone, err
		}
		switch st {
		case emitNull:
			if skipNull {
				b = b[:mark]
			} else {
				b = append(b, "null"...)
			}
		case emitNone: // a value of objectNode has one output
			return b, emitNone, errBail
		}
	}
	return append(b, '}'), emitWrote, nil
}

// emitArray is [src[] | f] (and [...] | nonempty: null when f gave no
// element) written element by element.
type emitArray struct {
	it       *iterMapNode
	f        emitter // nil: the elements as they are
	nonempty bool
}

func mkEmitArray(a *arrayNode, nonempty bool) *emitArray {
	it, ok := a.body.(*iterMapNode)
	if !ok {
		return nil
	}
	m := &emitArray{it: it, nonempty: nonempty}
	if it.f != nil {
		if m.f = mkEmitElem(it.f); m.f == nil {
			return nil
		}
	}
	return m
}

// mkEmitElem is the emitter of f, an array element's filter: filters
// before the object (objects | {…}) run as they are.
func mkEmitElem(f opter) emitter {
	if p, ok := f.(*pipeOptNode); ok {
		if r := mkEmitElem(p.r); r != nil {
			return &emitThen{p.l, r}
		}
		return nil
	}
	return mkEmitter(f, false)
}

// emitThen is l | r where only r is emitted.
type emitThen struct {
	l opter
	r emitter
}

func (m *emitThen) emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error) {
	v, ok, err := m.l.opt(e, in)
	if err != nil || !ok {
		return b, emitNone, err
	}
	return m.r.emit(e, v, b, prune)
}

func (m *emitArray) emit(e *env, in value, b []byte, prune bool) ([]byte, emitState, error) {
	mark := len(b)
	b = append(b, '[')
	open := len(b)
	count := 0
	err := m.it.iter(e, in, func(x value) error {
		at := len(b)
		if len(b) != open {
			b = append(b, ',')
		}
		var st emitState
		var err error
		if m.f == nil {
			b, st, err = e.emitValue(b, x, prune)
		} else {
			b, st, err = m.f.emit(e, x, b, prune)
		}
		switch st {
		case emitNone:
			b = b[:at]
		case emitNull:
			count++
			if prune {
				b = b[:at]
			} else {
				b = append(b, "null"...)
			}
		default:
			count++
		}
		return err
	})
	if err != nil {
		return b, emitNone, err
	}
	if count == 0 && m.nonempty {
		return b[:mark], emitNull, nil
	}
	return append(b, ']'), emitWrote, nil
}
