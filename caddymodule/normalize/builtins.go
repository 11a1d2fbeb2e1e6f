package normalize

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/itchyny/gojq"

	"socialrouter/internal/jsonscan"
)

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
				el, next, ok := jsonscan.NextElem(v.s, i)
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
			k, val, next, ok := jsonscan.NextMember(v.s, i)
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
	return mapKeys(e, v, func(_ *env, k, _ value) value { return k })
}

var entryKeys = []string{"key", "value"}

func entry(e *env, k, v value) value {
	c := e.newObj(2, true)
	copy(c.keys, entryKeys)
	c.vals[0], c.vals[1] = k, v
	return value{k: kObj, c: c}
}

// toEntries is to_entries: [keys[] as $k | {key: $k, value: .[$k]}].
func toEntries(e *env, v value) (value, error) { return mapKeys(e, v, entry) }

// mapKeys is [keys[] as $k | f($k; .[$k])] for an object or array v.
func mapKeys(e *env, v value, f func(e *env, k, x value) value) (value, error) {
	if v.pruned() {
		return vNull, errBail
	}
	buf := e.getBuf()
	defer e.putBuf(buf)
	switch v.k {
	case kObj:
		ps := e.sortedPairs(v)
		for _, p := range ps {
			buf = append(buf, f(e, strValue(p.key), p.val))
		}
		e.releasePairs(ps)
	case kArr:
		els := e.elems(v, e.getBuf())
		for i, x := range els {
			buf = append(buf, f(e, intValue(i), x))
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
		k, _, next, ok := jsonscan.NextMember(v.s, i)
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

func bLtrimstr(_ *env, v, a value) (value, error) { return trimStr(v, a, strings.CutPrefix) }
func bRtrimstr(_ *env, v, a value) (value, error) { return trimStr(v, a, strings.CutSuffix) }

// trimStr is ltrimstr or rtrimstr, as cut removes the prefix or suffix.
func trimStr(v, a value, cut func(s, t string) (string, bool)) (value, error) {
	s, t, err := strArgs(v, a)
	if err != nil {
		return vNull, err
	}
	if r, ok := cut(s, t); ok {
		return strValue(r), nil
	}
	return v, nil
}

func bStartswith(_ *env, v, a value) (value, error) {
	s, t, err := strArgs(v, a)
	return boolValue(err == nil && strings.HasPrefix(s, t)), err
}

func bEndswith(_ *env, v, a value) (value, error) {
	s, t, err := strArgs(v, a)
	return boolValue(err == nil && strings.HasSuffix(s, t)), err
}
