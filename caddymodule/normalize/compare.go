package normalize

import (
	"math"
	"slices"
	"strings"
)

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
