package normalize

import "strings"

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

// each is the stream loop of the nodes that feed every output of src (on
// in) to f, which appends to out: a src with one output runs without a
// scratch buffer; f's first error stops the loop, src's own error (raised
// after its outputs) comes last. The one-output forms of those nodes
// (pipe1Node, if1Node, …) are each with src and f both single-valued.
func each(e *env, src node, in value, out []value, f func(v value, out []value) ([]value, error)) ([]value, error) {
	if o, ok := src.(oner); ok {
		v, err := o.one(e, in)
		if err != nil {
			return out, err
		}
		return f(v, out)
	}
	buf, serr := src.eval(e, in, e.getBuf())
	defer e.putBuf(buf)
	for _, v := range buf {
		var err error
		if out, err = f(v, out); err != nil {
			return out, err
		}
	}
	return out, serr
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

// tryOptNode is try body (or body?) for a body with at most one output:
// a jq error is no output.
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

// bindOptNode is src as $var | body with one source output and at most one
// body output.
type bindOptNode struct {
	src  oner
	body opter
	b    bindNode
}

func (n *bindOptNode) opt(e *env, in value) (value, bool, error) {
	pushed, err := n.b.bindOne(e, n.src, in)
	if pushed {
		defer e.popFrame()
	}
	if err != nil {
		return vNull, false, err
	}
	return n.body.opt(e, in)
}

func (n *bindOptNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

// objectOptNode is objectNode when some value may have no output (then the
// object has none).
type objectOptNode struct {
	keys   []string
	quoted []string // quoteKeys(keys)
	vals   []opter
	slot   []int
	site   *site
}

func (n *objectOptNode) opt(e *env, in value) (value, bool, error) {
	if n.site != nil && in.k == kObj && in.raw() && !in.pruned() {
		e.pushFrame(n.site, in.s)
		defer e.popFrame()
	}
	c := e.newObjKeys(n.keys, n.quoted)
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
	// eq is the branch when it is an ifEqConstNode (the string branch of
	// the prelude's str, which every record field passes through), called
	// without an interface call.
	eq [kObj + 1]*ifEqConstNode
}

func (n *typeSwitch1Node) one(e *env, in value) (value, error) {
	if c := n.konst[in.k]; c != nil {
		return *c, nil
	}
	if q := n.eq[in.k]; q != nil {
		return q.one(e, in)
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
			n.eq[k], _ = b.(*ifEqConstNode)
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
	case *ifEqConstNode:
		if b, ok := decide(x.cond, k); ok {
			if b {
				return specialize(x.then, k)
			}
			return specialize(x.els, k)
		}
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
