package normalize

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"socialrouter/internal/jsonscan"
	"socialrouter/internal/jsonstr"
)

var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

type keySpan struct{ s string }

// validate accepts s when it is one JSON value (RFC 8259, as encoding/json
// reads it) in valid UTF-8, without duplicate object keys (once decoded),
// without numbers beyond float64 and nested at most 10000 deep. (Outside
// strings, a byte beyond ASCII is a syntax error.)
func (e *env) validate(s string) bool {
	i := jsonscan.SkipSpace(s, 0)
	if i == len(s) {
		return false
	}
	i = e.validValue(s, i, 0)
	return i >= 0 && jsonscan.SkipSpace(s, i) == len(s)
}

// validMember validates the value of an object member or array element at
// s[i] and the space after it, and returns the index of the byte that
// follows (a comma or the closing bracket when valid), or -1.
func (e *env) validMember(s string, i, depth int) int {
	i = e.validValue(s, i, depth)
	if i < 0 {
		return -1
	}
	if i = jsonscan.SkipSpace(s, i); i >= len(s) {
		return -1
	}
	return i
}

func (e *env) validValue(s string, i, depth int) int {
	if i >= len(s) {
		return -1
	}
	switch c := s[i]; c {
	case '"':
		end, _ := validString(s, i)
		return end
	case '{':
		if depth >= 10000 {
			return -1
		}
		start := len(e.keys)
		i = jsonscan.SkipSpace(s, i+1)
		if i < len(s) && s[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(s) || s[i] != '"' {
				return -1
			}
			end, esc := validString(s, i)
			if end < 0 {
				return -1
			}
			key := s[i+1 : end-1]
			if esc {
				key = jsonscan.Unquote(key)
			}
			e.keys = append(e.keys, keySpan{key})
			i = jsonscan.SkipSpace(s, end)
			if i >= len(s) || s[i] != ':' {
				return -1
			}
			if i = e.validMember(s, jsonscan.SkipSpace(s, i+1), depth+1); i < 0 {
				return -1
			}
			if s[i] == '}' {
				ok := e.uniqueKeys(e.keys[start:])
				e.keys = e.keys[:start]
				if !ok {
					return -1
				}
				return i + 1
			}
			if s[i] != ',' {
				return -1
			}
			i = jsonscan.SkipSpace(s, i+1)
		}
	case '[':
		if depth >= 10000 {
			return -1
		}
		i = jsonscan.SkipSpace(s, i+1)
		if i < len(s) && s[i] == ']' {
			return i + 1
		}
		for {
			if i = e.validMember(s, i, depth+1); i < 0 {
				return -1
			}
			if s[i] == ']' {
				return i + 1
			}
			if s[i] != ',' {
				return -1
			}
			i = jsonscan.SkipSpace(s, i+1)
		}
	case 't':
		if strings.HasPrefix(s[i:], "true") {
			return i + 4
		}
	case 'f':
		if strings.HasPrefix(s[i:], "false") {
			return i + 5
		}
	case 'n':
		if strings.HasPrefix(s[i:], "null") {
			return i + 4
		}
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return validNumber(s, i)
		}
	}
	return -1
}

// validString returns the index after the string at s[i] and whether it
// holds escapes, or -1.
func validString(s string, i int) (int, bool) {
	esc := false
	for i++; ; {
		i += jsonstr.PlainRun(s, i, false)
		for i < len(s) && !strStop[s[i]] {
			i++
		}
		if i >= len(s) {
			return -1, esc
		}
		if s[i] >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return -1, esc // invalid UTF-8: encoding/json would rewrite it
			}
			i += size
			continue
		}
		switch s[i] {
		case '"':
			return i + 1, esc
		case '\\':
			esc = true
			if i+1 >= len(s) {
				return -1, esc
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if jsonscan.DecodeU4(s[i:]) < 0 {
					return -1, esc
				}
				i += 6
			default:
				return -1, esc
			}
		default: // control character
			return -1, esc
		}
	}
}

func validNumber(s string, i int) int {
	start := i
	if s[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if !digits() {
		return -1
	}
	exp := false
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return -1
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		exp = true
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return -1
		}
	}
	if exp || i-start > 300 {
		if _, err := strconv.ParseFloat(s[start:i], 64); err != nil {
			return -1
		}
	}
	return i
}

// uniqueKeys reports whether the keys of one object are distinct.
func (e *env) uniqueKeys(keys []keySpan) bool {
	n := len(keys)
	if n <= 16 {
		for i := 1; i < n; i++ {
			for j := range i {
				if keys[i].s == keys[j].s {
					return false
				}
			}
		}
		return true
	}
	size := 64
	for size < 2*n {
		size *= 2
	}
	if cap(e.table) < size {
		e.table = make([]int32, size)
	}
	t := e.table[:size]
	clear(t)
	for i, k := range keys {
		h := uint32(2166136261)
		for j := 0; j < len(k.s); j++ {
			h = (h ^ uint32(k.s[j])) * 16777619
		}
		for p := int(h) & (size - 1); ; p = (p + 1) & (size - 1) {
			if t[p] == 0 {
				t[p] = int32(i + 1)
				break
			}
			if keys[t[p]-1].s == k.s {
				return false
			}
		}
	}
	return true
}
