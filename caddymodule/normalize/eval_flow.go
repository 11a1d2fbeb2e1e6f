package normalize

type pipeNode struct{ l, r node }

func (n *pipeNode) eval(e *env, in value, out []value) ([]value, error) {
	return each(e, n.l, in, out, func(v value, out []value) ([]value, error) {
		return n.r.eval(e, v, out)
	})
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
	err := n.iter(e, in, func(x value) error {
		if n.f == nil {
			out = append(out, x)
			return nil
		}
		y, ok, err := n.f.opt(e, x)
		if ok {
			out = append(out, y)
		}
		return err
	})
	return out, err
}

// iter calls each with the elements of src's value on in (before f), in
// order, until each fails; it is the loop of eval and of emitArray.
func (n *iterMapNode) iter(e *env, in value, each func(x value) error) error {
	v, err := n.src.one(e, in)
	if err != nil {
		return err
	}
	switch {
	case v.k == kArr && !v.pruned():
		if !v.raw() {
			for _, x := range v.c.arr {
				if err := each(x); err != nil {
					return err
				}
			}
			return nil
		}
		for i := 1; ; {
			el, next, ok := e.nextElem(v.s, i)
			if !ok {
				return nil
			}
			if err := each(rawValue(el)); err != nil {
				return err
			}
			i = next
		}
	case v.k == kObj && !v.pruned():
		ps := e.sortedPairs(v)
		defer e.releasePairs(ps)
		for _, p := range ps {
			if err := each(p.val); err != nil {
				return err
			}
		}
		return nil
	case v.k >= kArr:
		return errBail
	case n.optional:
		return nil
	}
	return errJQ
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
	return each(e, n.cond, in, out, func(c value, out []value) ([]value, error) {
		if c.truthy() {
			return n.then.eval(e, in, out)
		}
		return n.els.eval(e, in, out)
	})
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

func (n *if1Node) eval(e *env, in value, out []value) ([]value, error) { return evalOne(n, e, in, out) }

// mkIf1 is if cond then a else b end, each with one output.
func mkIf1(cond, then, els oner) oner {
	eq, ok := cond.(*eqConstNode)
	if !ok {
		return &if1Node{cond, then, els}
	}
	if _, ok := eq.x.(identNode); !ok {
		return &if1Node{cond, then, els}
	}
	n := &ifEqConstNode{cond: eq, then: then, els: els, empty: eq.c.k == kStr && eq.c.s == ""}
	if n.thenV, ok = identOrConst(then); !ok {
		return &if1Node{cond, then, els}
	}
	if n.elsV, ok = identOrConst(els); !ok {
		return &if1Node{cond, then, els}
	}
	return n
}

// identOrConst is x's value when it is a constant, nil when it is the
// input (.), and false otherwise.
func identOrConst(x oner) (*value, bool) {
	switch x := x.(type) {
	case identNode:
		return nil, true
	case *constNode:
		return &x.v, true
	}
	return nil, false
}

// ifEqConstNode is if . == c then a else b end (or !=), a and b each the
// input or a constant: the str and bool guards of the services' prelude,
// which every record field passes through, in one call where if1Node makes
// four (the test, its boolean, the branch).
type ifEqConstNode struct {
	cond        *eqConstNode
	then, els   oner   // for specialize
	thenV, elsV *value // the branches' constants; nil: the input
	// empty: c is "" (the str guard's test), told from the input's text
	// without a call (an escape never decodes to nothing).
	empty bool
}

func (n *ifEqConstNode) one(_ *env, in value) (value, error) {
	r := n.elsV
	var eq bool
	if n.empty {
		eq = in.k == kStr && (in.raw() && len(in.s) == 2 || !in.raw() && in.s == "")
	} else {
		eq = scalarEqual(in, n.cond.c)
	}
	if eq != n.cond.neg {
		r = n.thenV
	}
	if r != nil {
		return *r, nil
	}
	return in, nil
}

func (n *ifEqConstNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// andNode and orNode are jq's short-circuit boolean operators.
type andNode struct {
	l, r node
	or   bool
}

func (n *andNode) eval(e *env, in value, out []value) ([]value, error) {
	return each(e, n.l, in, out, func(l value, out []value) ([]value, error) {
		if l.truthy() == n.or {
			return append(out, boolValue(n.or)), nil
		}
		return each(e, n.r, in, out, func(r value, out []value) ([]value, error) {
			return append(out, boolValue(r.truthy())), nil
		})
	})
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
