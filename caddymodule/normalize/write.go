package normalize

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"socialrouter/internal/jsonscan"
	"socialrouter/internal/jsonstr"
)

// writeTop writes the record object, without its null members (the
// NormalizeItem rule).
func (e *env) writeTop(b []byte, v value) ([]byte, error) {
	return e.writeObject(b, v, v.pruned(), true)
}

func (e *env) write(b []byte, v value, prune bool) ([]byte, error) {
	switch v.k {
	case kNull:
		return append(b, "null"...), nil
	case kFalse:
		return append(b, "false"...), nil
	case kTrue:
		return append(b, "true"...), nil
	case kNum:
		return appendNumber(b, v)
	case kStr:
		if v.raw() {
			return appendRawString(b, v.s[1:len(v.s)-1]), nil
		}
		return appendJSONString(b, v.s), nil
	case kArr:
		prune = prune || v.pruned()
		b = append(b, '[')
		first := true
		if v.raw() {
			for i := 1; ; {
				el, next, ok := jsonscan.NextElem(v.s, i)
				if !ok {
					break
				}
				i = next
				if prune && el[0] == 'n' {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				var err error
				if b, err = e.write(b, rawValue(el), prune); err != nil {
					return b, err
				}
			}
		} else {
			for _, x := range v.c.arr {
				if prune && x.k == kNull {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				var err error
				if b, err = e.write(b, x, prune); err != nil {
					return b, err
				}
			}
		}
		return append(b, ']'), nil
	}
	return e.writeObject(b, v, prune || v.pruned(), false)
}

func (e *env) writeObject(b []byte, v value, prune, dropNulls bool) ([]byte, error) {
	b = append(b, '{')
	open := len(b) // a member written makes b longer: a comma before the next
	skipNull := prune || dropNulls
	var err error
	if !v.raw() && v.c.sorted {
		c := v.c
		for i, x := range c.vals {
			if skipNull && x.k == kNull {
				continue
			}
			if len(b) != open {
				b = append(b, ',')
			}
			if c.quoted != nil {
				b = append(b, c.quoted[i]...)
			} else {
				b = append(appendJSONString(b, c.keys[i]), ':')
			}
			if b, err = e.write(b, x, prune); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	ps := e.sortedPairs(v)
	for _, p := range ps {
		if skipNull && p.val.k == kNull {
			continue
		}
		if len(b) != open {
			b = append(b, ',')
		}
		b = append(appendJSONString(b, p.key), ':')
		if b, err = e.write(b, p.val, prune); err != nil {
			break
		}
	}
	e.releasePairs(ps)
	if err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// quoteKeys is each of keys as the record writes it, quoted, with its
// colon: a node's constant keys, encoded once at compile time rather than
// for every object the node builds.
func quoteKeys(keys []string) []string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = string(append(appendJSONString(nil, k), ':'))
	}
	return q
}

// appendNumber writes a number as encoding/json writes a float64 or an
// int; NaN and infinities, which it rejects, bail.
func appendNumber(b []byte, v value) ([]byte, error) {
	if v.isInt() {
		return strconv.AppendInt(b, int64(v.n), 10), nil
	}
	if v.raw() && plainInt(v.s) {
		return append(b, v.s...), nil
	}
	f := v.float()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, errBail
	}
	return appendFloat(b, f), nil
}

// plainInt: an integer literal that float64 holds exactly and that
// encoding/json writes back unchanged.
func plainInt(s string) bool {
	if s[0] == '-' {
		s = s[1:]
	}
	if len(s) > 15 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendFloat formats f as encoding/json (and gojq's encoder) do.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if x := math.Abs(f); x != 0 && (x < 1e-6 || x >= 1e21) {
		format = 'e'
	}
	n0 := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n-n0 >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString quotes s as json.Marshal does (HTML-safe).
func appendJSONString(b []byte, s string) []byte {
	return jsonstr.Append(b, s, true)
}

// appendRawString writes the string literal body (JSON text, escapes
// included) as json.Marshal writes the string it decodes to.
func appendRawString(b []byte, body string) []byte {
	b = append(b, '"')
	for {
		i := strings.IndexByte(body, '\\')
		if i < 0 {
			b = appendStringContent(b, body)
			return append(b, '"')
		}
		b = appendStringContent(b, body[:i])
		var r rune
		switch c := body[i+1]; c {
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			r = jsonscan.DecodeU4(body[i:])
			i += 4
			if utf16.IsSurrogate(r) {
				if dec := utf16.DecodeRune(r, jsonscan.DecodeU4(body[i+2:])); dec != unicode.ReplacementChar {
					r = dec
					i += 6
				} else {
					r = unicode.ReplacementChar
				}
			}
		default: // " \ /
			r = rune(c)
		}
		var tmp [utf8.UTFMax]byte
		b = appendStringContent(b, unsafe.String(&tmp[0], utf8.EncodeRune(tmp[:], r)))
		body = body[i+2:]
	}
}

// appendStringContent is appendJSONString without the quotes.
func appendStringContent(b []byte, s string) []byte { return jsonstr.AppendContent(b, s, true) }

// gojqNumberText is tostring of a number: gojq's encoder.
func gojqNumberText(b []byte, v value) ([]byte, error) {
	if v.isInt() {
		return strconv.AppendInt(b, int64(v.n), 10), nil
	}
	if v.raw() && plainInt(v.s) {
		if v.s == "-0" {
			return append(b, "-0"...), nil
		}
		return append(b, v.s...), nil
	}
	f := v.float()
	if math.IsNaN(f) {
		return append(b, "null"...), nil
	}
	f = min(max(f, -math.MaxFloat64), math.MaxFloat64)
	return appendFloat(b, f), nil
}
