package normalize

import (
	"math"
	"unicode/utf8"

	"socialrouter/internal/jsonscan"
)

// fieldNode is .key; site and slot locate the key in an index of the
// input when one is active.
type fieldNode struct {
	key  string
	site *site
	slot int
}

func (n *fieldNode) one(e *env, in value) (value, error) {
	if in.k == kObj && in.f == fRaw {
		// The common case first (a raw object of the item, not pruned):
		// field reads are the plan's most frequent node.
		return e.lookup(in.s, n.key, n.site, n.slot), nil
	}
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
			el, next, ok := jsonscan.NextElem(v.s, p)
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
