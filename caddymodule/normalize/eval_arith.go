package normalize

import "math"

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

// arith applies an operator to two numbers: iop to ints, which reports
// false on overflow (gojq would go to a big integer: the plan bails), fop
// to float64s.
func arith(l, r value, iop func(a, b int) (int, bool), fop func(a, b float64) float64) (value, error) {
	li, ri, lf, rf, ints := numbers(l, r)
	if !ints {
		return floatValue(fop(lf, rf)), nil
	}
	if v, ok := iop(li, ri); ok {
		return intValue(v), nil
	}
	return vNull, errBail
}

func addInt(a, b int) (int, bool)   { v := a + b; return v, (v >= a) == (b >= 0) }
func addFloat(a, b float64) float64 { return a + b }
func subInt(a, b int) (int, bool)   { v := a - b; return v, (v <= a) == (b >= 0) }
func subFloat(a, b float64) float64 { return a - b }
func mulFloat(a, b float64) float64 { return a * b }
func mulInt(a, b int) (int, bool) {
	if b == -1 {
		return -a, a != math.MinInt
	}
	v := a * b
	return v, b == 0 || v/b == a
}

func opAdd(e *env, l, r value) (value, error) {
	switch {
	case l.k == kNum && r.k == kNum:
		return arith(l, r, addInt, addFloat)
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

// numOp is an operator of numbers (arith with iop and fop). Other
// operands are a jq error, or bail where gojq gives them a meaning the
// plan does not model (array difference, string repetition, object merge).
func numOp(iop func(a, b int) (int, bool), fop func(a, b float64) float64, bail func(l, r value) bool) binop {
	return func(_ *env, l, r value) (value, error) {
		switch {
		case l.k == kNum && r.k == kNum:
			return arith(l, r, iop, fop)
		case bail(l, r):
			return vNull, errBail
		}
		return vNull, errJQ
	}
}

var (
	opSub = numOp(subInt, subFloat, func(l, r value) bool { return l.k == kArr && r.k == kArr })
	opMul = numOp(mulInt, mulFloat, func(l, r value) bool {
		return l.k == kStr && r.k == kNum || l.k == kNum && r.k == kStr || l.k == kObj && r.k == kObj
	})
)

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
	return each(e, n.x, in, out, func(v value, out []value) ([]value, error) {
		w, err := negate(v)
		if err != nil {
			return out, err
		}
		return append(out, w), nil
	})
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
