package normalize

import (
	"math"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"socialrouter/internal/jsonscan"
	"socialrouter/internal/jsonstr"
	"socialrouter/internal/jsontree"
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
func appendFloat(b []byte, f float64) []byte { return jsontree.AppendFloat(b, f) }

// appendJSONString quotes s as json.Marshal does (HTML-safe).
func appendJSONString(b []byte, s string) []byte {
	return jsonstr.Append(b, s, true)
}

// appendRawString writes the string literal body (JSON text of the item,
// escapes included) as json.Marshal writes the string it decodes to. The
// item passed jsonscan's strict check: the body is valid UTF-8 with no
// control byte and no bare '"', so of what json.Marshal escapes only '<',
// '>', '&', U+2028 and U+2029 can appear as they are, beside the body's
// own escapes. One pass finds all of them (rawPlain), where an
// IndexByte for the escapes and the general escaper's pass, which also
// stops at every non-ASCII rune to check it, were two (issue 38).
func appendRawString(b []byte, body string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; ; {
		if i = rawPlain(body, i); i >= len(body) {
			break
		}
		switch c := body[i]; c {
		case '\\':
			b, i = appendEscape(append(b, body[start:i]...), body, i)
			start = i
		case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
			if i+2 < len(body) && body[i+1] == 0x80 && body[i+2]&^1 == 0xA8 {
				b = append(b, body[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', '8'+body[i+2]-0xA8)
				i += 3
				start = i
			} else {
				i++
			}
		case '"': // never bare in a checked body; written as json.Marshal would
			b = append(b, body[start:i]...)
			b = append(b, '\\', '"')
			i++
			start = i
		case '^', '|', '~': // rawStops' company of '\\', '<' and '>'
			i++
		default: // '<', '>', '&' (and 0x1c, 0x1e, never in a checked body)
			b = append(b, body[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			i++
			start = i
		}
	}
	b = append(b, body[start:]...)
	return append(b, '"')
}

// appendEscape writes the character of the escape at body[i] as
// json.Marshal writes it, and returns the index after the escape.
func appendEscape(b []byte, body string, i int) ([]byte, int) {
	var r rune
	next := i + 2
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
		next = i + 6
		if utf16.IsSurrogate(r) {
			if dec := utf16.DecodeRune(r, jsonscan.DecodeU4(body[next:])); dec != unicode.ReplacementChar {
				r = dec
				next += 6
			} else {
				r = unicode.ReplacementChar
			}
		}
	default: // " \ /
		r = rune(c)
	}
	var tmp [utf8.UTFMax]byte
	return appendStringContent(b, unsafe.String(&tmp[0], utf8.EncodeRune(tmp[:], r))), next
}

const hexDigits = "0123456789abcdef"

// rawStop marks the bytes at which rawPlain stops.
var rawStop = [256]bool{'\\': true, '<': true, '>': true, '&': true, '"': true, 0xE2: true}

// rawPlain is the index of the first byte of body from i that
// appendRawString must look at ('\\', '<', '>', '&', '"' or 0xE2; the
// eight-byte steps also stop at '^', '|' and '~'), or len(body):
// sixteen bytes a step, then eight, then byte by byte.
func rawPlain(s string, i int) int {
	for ; i+16 <= len(s); i += 16 {
		// Two words a step, one branch for both: most string bodies
		// have no byte to look at for dozens of bytes.
		m := rawStops(jsonstr.Load8(s, i))
		if n := rawStops(jsonstr.Load8(s, i+8)); m|n != 0 {
			if m != 0 {
				return i + bits.TrailingZeros64(m)/8
			}
			return i + 8 + bits.TrailingZeros64(n)/8
		}
	}
	if i+8 <= len(s) {
		if m := rawStops(jsonstr.Load8(s, i)); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for ; i < len(s) && !rawStop[s[i]]; i++ {
	}
	return i
}

// rawStops flags the bytes of w that rawPlain stops at (the lowest flag
// exact). '"' and '&' (0x22, 0x26) differ in one bit, as do '<' and '>'
// (0x3c, 0x3e): one test each.
//
// '\\' (0x5c) and '<', '>' are one test too: x|0x62 == 0x7e holds for
// 0x1c, 0x1e, '<', '>', '\\', '^', '|' and '~', so rawPlain also stops at
// '^', '|' and '~', which appendRawString copies as they are, and at
// 0x1c and 0x1e, which a checked body never holds (three tests a word,
// where four were: issue 38).
func rawStops(w uint64) uint64 {
	return zeroByte((w|ones8*0x62)^(ones8*0x7e)) | zeroByte((w|ones8*0x04)^(ones8*'&')) | zeroByte(w^(ones8*0xE2))
}

const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

// zeroByte flags the zero bytes of x (the lowest flag exact).
func zeroByte(x uint64) uint64 { return (x - ones8) &^ x & highs8 }

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
