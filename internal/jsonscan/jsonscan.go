// Package jsonscan is the gateway's one reader of untrusted JSON bytes. It
// validates them (valid.go: strict, what the in-place readers may trust, or
// lax, exactly encoding/json's syntax; both report duplicated keys
// themselves) and then reads the text in place: where a value ends, the
// members of an object, the elements of an array, the decoded body of a
// string and the value at a path (get.go), without decoding anything into
// Go values. The normalizer's plan reads upstream items with it, the
// upstream item splitter checks and splits a body in one pass, the source
// clients read run and snapshot answers, the router matches items to
// inputs, the API refuses request bodies with duplicated keys and the
// stored run splice finds the run's data member.
//
// The scanners trust the text's syntax: the caller validates it first
// (Checker, ValidSyntax, or encoding/json). On valid JSON they read exactly
// what encoding/json decodes, key for key (FuzzScan holds them to it); on
// invalid text they return without panicking only where said.
package jsonscan

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Bytes views b as a string without copying, for the scanners. The string
// is valid only while b is not modified.
func Bytes(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// IsSpace reports whether c is JSON whitespace.
func IsSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// SkipSpace returns the index of the first non-space byte of s from i, or
// len(s).
func SkipSpace(s string, i int) int {
	for i < len(s) && IsSpace(s[i]) {
		i++
	}
	return i
}

// TrimSpace is s without leading and trailing JSON whitespace.
func TrimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && IsSpace(s[i]) {
		i++
	}
	for j > i && IsSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// SkipString returns the index after the string starting at s[i] == '"':
// after the first quote not escaped by an odd run of backslashes, or
// len(s) when there is none.
func SkipString(s string, i int) int {
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

// bracket marks the bytes SkipValue stops at inside an array or object.
var bracket = func() (t [256]bool) {
	for _, c := range `"{}[]` {
		t[c] = true
	}
	return t
}()

// SkipValue returns the index after the value starting at s[i].
func SkipValue(s string, i int) int {
	switch s[i] {
	case '"':
		return SkipString(s, i)
	case '{', '[':
		depth := 0
		for ; i < len(s); i++ {
			for i < len(s) && !bracket[s[i]] {
				i++
			}
			if i == len(s) {
				break
			}
			switch s[i] {
			case '"':
				i = SkipString(s, i) - 1
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

// NextMember reads the member of an object at i (just after '{' or after
// the previous member): its key (decoded), its value's text and the index
// to continue from; ok is false at the closing '}'.
func NextMember(s string, i int) (key, val string, next int, ok bool) {
	i = SkipSpace(s, i)
	if s[i] == ',' {
		i = SkipSpace(s, i+1)
	}
	if s[i] != '"' {
		return "", "", i, false
	}
	ke := SkipString(s, i)
	key = s[i+1 : ke-1]
	if strings.IndexByte(key, '\\') >= 0 {
		key = Unquote(key)
	}
	i = SkipSpace(s, ke)
	i = SkipSpace(s, i+1) // ':'
	ve := SkipValue(s, i)
	return key, s[i:ve], ve, true
}

// NextElem reads the element of an array at i (just after '[' or after
// the previous element): its text and the index to continue from; ok is
// false at the closing ']'.
func NextElem(s string, i int) (val string, next int, ok bool) {
	i = SkipSpace(s, i)
	if s[i] == ',' {
		i = SkipSpace(s, i+1)
	}
	if s[i] == ']' {
		return "", i, false
	}
	ve := SkipValue(s, i)
	return s[i:ve], ve, true
}

// Unquote decodes the body of a string literal (without its quotes) as
// encoding/json does: invalid surrogate escapes become U+FFFD. Bytes that
// are not UTF-8 are kept as they are.
func Unquote(s string) string {
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
			rr := DecodeU4(s[r-1:])
			r += 5
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, DecodeU4(s[r:])); dec != unicode.ReplacementChar {
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

// DecodeU4 decodes the \uXXXX escape at the start of s, or returns -1.
func DecodeU4(s string) rune {
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
