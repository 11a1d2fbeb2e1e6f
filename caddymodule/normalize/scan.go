package normalize

import (
	"slices"
	"strings"

	"socialrouter/internal/jsonscan"
)

// Raw values: objects and arrays still in the item's bytes, read in place
// with jsonscan (the item is validated first, so the scanners' trust in
// its syntax holds).

// rawMember is key of the raw object raw, or null.
func rawMember(raw, key string) value {
	for i := 1; ; {
		k, v, next, ok := jsonscan.NextMember(raw, i)
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
	return raw[jsonscan.SkipSpace(raw, 1)] == raw[len(raw)-1]
}

func rawLen(v value) int {
	n := 0
	if v.k == kObj {
		for i := 1; ; n++ {
			_, _, next, ok := jsonscan.NextMember(v.s, i)
			if !ok {
				return n
			}
			i = next
		}
	}
	for i := 1; ; n++ {
		_, next, ok := jsonscan.NextElem(v.s, i)
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
		el, next, ok := jsonscan.NextElem(v.s, i)
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
			k, val, next, ok := jsonscan.NextMember(v.s, i)
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
		return e.rawMember(v.s, key)
	}
	for i, k := range v.c.keys {
		if k == key {
			return v.c.vals[i]
		}
	}
	return vNull
}
