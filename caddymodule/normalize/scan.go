package normalize

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipWS(s string, i int) int {
	for i < len(s) && isWS(s[i]) {
		i++
	}
	return i
}

func trimWS(s string) string {
	i, j := 0, len(s)
	for i < j && isWS(s[i]) {
		i++
	}
	for j > i && isWS(s[j-1]) {
		j--
	}
	return s[i:j]
}

// skipString returns the index after the string starting at s[i] == '"'.
func skipString(s string, i int) int {
	i++
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		i += j
		n := 0
		for k := i - 1; s[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index after the value starting at s[i].
func skipValue(s string, i int) int {
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for ; i < len(s); i++ {
			switch s[i] {
			case '"':
				i = skipString(s, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	case 't', 'n':
		return i + 4
	case 'f':
		return i + 5
	}
	for i++; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			break
		}
	}
	return i
}

// nextMember reads the member of a raw object at i (just after '{' or
// after the previous member): its key (decoded), its value text and the
// index to continue from.
func nextMember(s string, i int) (key, val string, next int, ok bool) {
	i = skipWS(s, i)
	if s[i] == ',' {
		i = skipWS(s, i+1)
	}
	if s[i] != '"' {
		return "", "", i, false
	}
	ke := skipString(s, i)
	key = s[i+1 : ke-1]
	if strings.IndexByte(key, '\\') >= 0 {
		key = unquoteJSON(key)
	}
	i = skipWS(s, ke)
	i = skipWS(s, i+1) // ':'
	ve := skipValue(s, i)
	return key, s[i:ve], ve, true
}

// nextElem reads the element of a raw array at i (just after '[' or after
// the previous element).
func nextElem(s string, i int) (val string, next int, ok bool) {
	i = skipWS(s, i)
	if s[i] == ',' {
		i = skipWS(s, i+1)
	}
	if s[i] == ']' {
		return "", i, false
	}
	ve := skipValue(s, i)
	return s[i:ve], ve, true
}

// rawMember is key of the raw object raw, or null.
func rawMember(raw, key string) value {
	for i := 1; ; {
		k, v, next, ok := nextMember(raw, i)
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
	return raw[skipWS(raw, 1)] == raw[len(raw)-1]
}

func rawLen(v value) int {
	n := 0
	if v.k == kObj {
		for i := 1; ; n++ {
			_, _, next, ok := nextMember(v.s, i)
			if !ok {
				return n
			}
			i = next
		}
	}
	for i := 1; ; n++ {
		_, next, ok := nextElem(v.s, i)
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
		el, next, ok := nextElem(v.s, i)
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
			k, val, next, ok := nextMember(v.s, i)
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
		return rawMember(v.s, key)
	}
	for i, k := range v.c.keys {
		if k == key {
			return v.c.vals[i]
		}
	}
	return vNull
}

// unquoteJSON decodes the body of a JSON string literal as encoding/json
// does (invalid surrogates become U+FFFD).
func unquoteJSON(s string) string {
	b := make([]byte, 0, len(s))
	for r := 0; r < len(s); {
		c := s[r]
		if c != '\\' {
			b = append(b, c)
			r++
			continue
		}
		r++
		switch s[r] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			rr := getu4(s[r-1:])
			r += 5
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
					r += 6
					b = utf8.AppendRune(b, dec)
					continue
				}
				rr = unicode.ReplacementChar
			}
			b = utf8.AppendRune(b, rr)
			continue
		default: // " \ /
			b = append(b, s[r])
		}
		r++
	}
	return string(b)
}

func getu4(s string) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range []byte(s[2:6]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
