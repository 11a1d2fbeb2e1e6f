// Package jsonvalid checks that JSON text is what the gateway's in-place
// readers (jsonscan, the normalizer's plan) may trust: one JSON value as
// encoding/json reads it, in valid UTF-8, without duplicate object keys
// (once decoded), without numbers beyond float64 and nested at most 10000
// deep. Outside strings, a byte beyond ASCII is a syntax error.
//
// The upstream splitter checks a body once with it, and the normalizer
// trusts the items of a body that passed instead of checking each again:
// one pass over the upstream's bytes where there were three.
package jsonvalid

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"socialrouter/internal/jsonscan"
	"socialrouter/internal/jsonstr"
)

// MaxDepth is the deepest nesting accepted, as encoding/json's.
const MaxDepth = 10000

// Checker validates JSON text. Its scratch space (the keys of the objects
// being read) is kept between calls, so a pooled Checker allocates nothing
// on ordinary input. Not safe for concurrent use.
type Checker struct {
	keys  []string
	table []int32
}

// Valid reports whether s is one valid JSON value, with space around it
// allowed.
func (c *Checker) Valid(s string) bool {
	i := jsonscan.SkipSpace(s, 0)
	if i == len(s) {
		return false
	}
	i = c.Value(s, i)
	return i >= 0 && jsonscan.SkipSpace(s, i) == len(s)
}

// Value validates the value starting at s[i] (not at space) and returns the
// index after it, or -1.
func (c *Checker) Value(s string, i int) int {
	defer c.Reset()
	return c.value(s, i, 0)
}

// Object validates the object starting at s[i] and returns the index after
// it, or -1. member is called with each top-level key (decoded) and raw
// value, in order, as they are read; on invalid text it may have been
// called for the members before the fault.
func (c *Checker) Object(s string, i int, member func(key, value string)) int {
	defer c.Reset()
	if i >= len(s) || s[i] != '{' {
		return -1
	}
	return c.object(s, i, 0, member)
}

var pool = sync.Pool{New: func() any { return new(Checker) }}

// Get returns a pooled Checker; Put hands it back.
func Get() *Checker { return pool.Get().(*Checker) }

// Put returns c to the pool.
func Put(c *Checker) { pool.Put(c) }

// IsObject reports whether s (without surrounding space) is one object,
// calling member as Object does, with a pooled Checker.
func IsObject(s string, member func(key, value string)) bool {
	c := Get()
	defer Put(c)
	return c.Object(s, 0, member) == len(s)
}

// IsPlainString reports whether s is exactly one JSON string that needs no
// decoding: no escape, in valid UTF-8 (its content is s without the quotes).
func IsPlainString(s string) bool {
	if len(s) == 0 || s[0] != '"' {
		return false
	}
	end, esc := validString(s, 0)
	return end == len(s) && !esc
}

// IsNumber reports whether s is exactly one JSON number within float64.
func IsNumber(s string) bool {
	return len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && validNumber(s, 0) == len(s)
}

// Reset drops the views of the last text read, so that a pooled Checker
// does not keep it alive.
func (c *Checker) Reset() {
	clear(c.keys)
	c.keys = c.keys[:0]
}

// member validates the value of an object member or array element at s[i]
// and the space after it, and returns the index of the byte that follows (a
// comma or the closing bracket when valid), or -1.
func (c *Checker) member(s string, i, depth int) int {
	if i = c.value(s, i, depth); i < 0 {
		return -1
	}
	if i = jsonscan.SkipSpace(s, i); i >= len(s) {
		return -1
	}
	return i
}

func (c *Checker) value(s string, i, depth int) int {
	if i >= len(s) {
		return -1
	}
	switch ch := s[i]; ch {
	case '"':
		end, _ := validString(s, i)
		return end
	case '{':
		return c.object(s, i, depth, nil)
	case '[':
		if depth >= MaxDepth {
			return -1
		}
		i = jsonscan.SkipSpace(s, i+1)
		if i < len(s) && s[i] == ']' {
			return i + 1
		}
		for {
			if i = c.member(s, i, depth+1); i < 0 {
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
		if ch == '-' || ch >= '0' && ch <= '9' {
			return validNumber(s, i)
		}
	}
	return -1
}

// object validates the object at s[i], calling member (when not nil) for
// each of its own members.
func (c *Checker) object(s string, i, depth int, member func(key, value string)) int {
	if depth >= MaxDepth {
		return -1
	}
	start := len(c.keys)
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
		c.keys = append(c.keys, key)
		i = jsonscan.SkipSpace(s, end)
		if i >= len(s) || s[i] != ':' {
			return -1
		}
		v := jsonscan.SkipSpace(s, i+1)
		end = c.value(s, v, depth+1)
		if end < 0 {
			return -1
		}
		if member != nil {
			member(key, s[v:end])
		}
		if i = jsonscan.SkipSpace(s, end); i >= len(s) {
			return -1
		}
		if s[i] == '}' {
			ok := c.uniqueKeys(c.keys[start:])
			clear(c.keys[start:])
			c.keys = c.keys[:start]
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
}

// strStop marks the bytes that end a plain run inside a string.
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

// uniqueKeys reports whether the keys of one object are distinct: pairwise
// for a few, through a small open-addressing table beyond.
func (c *Checker) uniqueKeys(keys []string) bool {
	n := len(keys)
	if n <= 16 {
		for i := 1; i < n; i++ {
			for j := range i {
				if keys[i] == keys[j] {
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
	if cap(c.table) < size {
		c.table = make([]int32, size)
	}
	t := c.table[:size]
	clear(t)
	for i, k := range keys {
		h := uint32(2166136261)
		for j := 0; j < len(k); j++ {
			h = (h ^ uint32(k[j])) * 16777619
		}
		for p := int(h) & (size - 1); ; p = (p + 1) & (size - 1) {
			if t[p] == 0 {
				t[p] = int32(i + 1)
				break
			}
			if keys[t[p]-1] == k {
				return false
			}
		}
	}
	return true
}
