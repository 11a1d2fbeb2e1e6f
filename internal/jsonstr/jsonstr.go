// Package jsonstr writes JSON strings as encoding/json does, with or
// without its HTML escaping: the one string escaper of the run encoder
// (HTML escaping off, as the API answers) and the normalizer's writer
// (HTML escaping on, as jq and json.Marshal write).
package jsonstr

import (
	"math/bits"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// safe[html][c] reports that ASCII byte c is written as itself.
var safe = func() (t [2][utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[0][c] = c != '"' && c != '\\'
		t[1][c] = t[0][c] && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// Append appends s quoted: see AppendContent.
func Append(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	b = AppendContent(b, s, html)
	return append(b, '"')
}

// AppendContent appends s escaped as encoding/json escapes a string, without
// the quotes: quotes, backslashes and control bytes escaped (the short
// forms \b \f \n \r \t where JSON has them), invalid UTF-8 as \ufffd, U+2028
// and U+2029 escaped, and, when html, '<', '>' and '&' as \u003c….
func AppendContent(b []byte, s string, html bool) []byte {
	ok := &safe[0]
	if html {
		ok = &safe[1]
	}
	start := 0
	for i := 0; i < len(s); {
		if i += plainLen(s, i, html); i >= len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if ok[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			start = i + size
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			start = i + size
		}
		i += size
	}
	return append(b, s[start:]...)
}

// Word-at-a-time byte tests (exact as booleans): eight bytes of s from i,
// and whether any of them is zero, equal to b or less than n (n <= 0x80).
const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

// Load8 is the 8 bytes of s at i, little-endian: the word loop of this
// package's scans and of the normalizer's raw-string scan. It slices the
// word first: its eight indexes are then constants below its known
// length, where s[i+k] cost a bounds check each (the compiler cannot tell
// i from a caller is not negative).
func Load8(s string, i int) uint64 {
	w := s[i : i+8]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

func anyLess(x uint64, n byte) uint64 { return (x - ones8*uint64(n)) &^ x & highs8 }
func anyEq(x uint64, b byte) uint64   { return anyLess(x^(ones8*uint64(b)), 1) }

// PlainRun returns the length of the prefix of s[i:] made of bytes that
// are printable ASCII other than '"' and '\\' (and, when html, '<', '>' and
// '&'), a multiple of 8 bytes: the caller finishes byte by byte.
func PlainRun(s string, i int, html bool) int {
	j := i
	for ; j+8 <= len(s); j += 8 {
		w := Load8(s, j)
		m := w&highs8 | anyLess(w, 0x20) | anyEq(w, '"') | anyEq(w, '\\')
		if html {
			m |= anyEq(w, '<') | anyEq(w, '>') | anyEq(w, '&')
		}
		if m != 0 {
			break
		}
	}
	return j - i
}

// plainLen is PlainRun to the first byte that ends the run, where that
// byte is in a word of 8 (the caller finishes a shorter tail byte by
// byte): the escaper resumes there, not up to 7 bytes before it.
func plainLen(s string, i int, html bool) int {
	for j := i; j+8 <= len(s); j += 8 {
		// The lowest flagged byte of the mask is exact (bytes above it may
		// be flagged falsely). '"' and '&' (0x22, 0x26) differ in one
		// bit, as do '<' and '>' (0x3c, 0x3e): one test each. Written out
		// here, not in a helper: it would not be inlined.
		w := Load8(s, j)
		m := w&highs8 | anyLess(w, 0x20) | anyEq(w, '\\')
		if html {
			m |= anyEq(w|ones8*0x04, '&') | anyEq(w|ones8*0x02, '>')
		} else {
			m |= anyEq(w, '"')
		}
		if m != 0 {
			return j - i + bits.TrailingZeros64(m)/8
		}
	}
	return (len(s) - i) &^ 7
}
