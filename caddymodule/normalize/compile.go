package normalize

import (
	"slices"

	"github.com/itchyny/gojq"
)

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
	l, r, err := c.query2(q.Left, in, q.Right, rin)
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

// query2 compiles a on site ain, then b on site bin.
func (c *planCompiler) query2(a *gojq.Query, ain *site, b *gojq.Query, bin *site) (node, node, error) {
	l, err := c.query(a, ain)
	if err != nil {
		return nil, nil, err
	}
	r, err := c.query(b, bin)
	return l, r, err
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
