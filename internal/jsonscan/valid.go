package jsonscan

// This file holds the validation that makes untrusted bytes safe for the
// in-place readers: strict (what the normalizer's plan and the splitter
// trust) or lax (exactly encoding/json's syntax), both reporting the
// duplicated keys themselves.

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"socialrouter/internal/jsonstr"
)

// MaxDepth is the deepest nesting accepted, as encoding/json's.
const MaxDepth = 10000

// Checker validates JSON text. Strict (the zero value), it accepts one JSON
// value as encoding/json reads it, in valid UTF-8, without duplicate object
// keys (once decoded), without numbers beyond float64 and nested at most
// MaxDepth deep; outside strings, a byte beyond ASCII is a syntax error.
// Lax, it accepts exactly encoding/json's syntax (json.Valid) and records
// the first duplicated key instead of refusing it: see Duplicate.
//
// Its scratch space (the keys of the objects being read) is kept between
// calls, so a pooled Checker allocates nothing on ordinary input. Not safe
// for concurrent use.
type Checker struct {
	keys   []string
	table  []int32
	lax    bool
	dup    string
	hasDup bool
}

// Syntax reports whether s is one value encoding/json accepts (json.Valid),
// with space around it allowed: the lax check, for bodies that are read
// for a few fields rather than trusted whole. Duplicated keys are allowed;
// Duplicate reports the first one.
func (c *Checker) Syntax(s string) bool {
	c.lax, c.dup, c.hasDup = true, "", false
	defer func() { c.lax = false }()
	return c.Valid(s)
}

// Duplicate returns a key that appears twice in one object of the text the
// last Syntax call read, and whether there is one.
func (c *Checker) Duplicate() (string, bool) { return c.dup, c.hasDup }

// FindDuplicate returns a key that appears twice in one object of the JSON
// text b, at any depth (the first found: the innermost object closes
// first), and whether there is one. Keys are compared decoded ("\u0075rl"
// is "url"). Text encoding/json does not accept reports no duplicate:
// decoding it fails on its own. encoding/json keeps the last of
// duplicated keys, so {"url": "nope", "url": "<valid>"} would pass
// validation of one value and mean another to a reader that keeps the
// first: an API that bills must refuse it.
func FindDuplicate(b []byte) (string, bool) {
	c := Get()
	defer Put(c)
	if !c.Syntax(Bytes(b)) {
		return "", false
	}
	return c.Duplicate()
}

// ValidSyntax reports whether b is one value encoding/json accepts, with a
// pooled Checker.
func ValidSyntax(b []byte) bool {
	c := Get()
	defer Put(c)
	return c.Syntax(Bytes(b))
}

// Valid reports whether s is one valid JSON value, with space around it
// allowed.
func (c *Checker) Valid(s string) bool {
	i := SkipSpace(s, 0)
	if i == len(s) {
		return false
	}
	i = c.Value(s, i)
	return i >= 0 && SkipSpace(s, i) == len(s)
}

// Value validates the value starting at s[i] (not at space) and returns the
// index after it, or -1.
func (c *Checker) Value(s string, i int) int {
	c.dup, c.hasDup = "", false
	defer c.Reset()
	return c.value(s, i, 0)
}

// Object validates the object starting at s[i] and returns the index after
// it, or -1. member is called with each top-level key (decoded) and raw
// value, in order, as they are read; on invalid text it may have been
// called for the members before the fault.
func (c *Checker) Object(s string, i int, member func(key, value string)) int {
	c.dup, c.hasDup = "", false
	defer c.Reset()
	if i >= len(s) || s[i] != '{' {
		return -1
	}
	return c.object(s, i, 0, member)
}

var pool = sync.Pool{New: func() any { return new(Checker) }}

// Get returns a pooled Checker; Put hands it back.
func Get() *Checker { return pool.Get().(*Checker) }

// Put returns c to the pool, without the duplicated key it found (a view
// of the text it read).
func Put(c *Checker) {
	c.dup, c.hasDup = "", false
	pool.Put(c)
}

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
	end, esc := validString(s, 0, false)
	return end == len(s) && !esc
}

// IsNumber reports whether s is exactly one JSON number within float64.
func IsNumber(s string) bool {
	return len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && validNumber(s, 0, false) == len(s)
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
	if i = SkipSpace(s, i); i >= len(s) {
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
		end, _ := validString(s, i, c.lax)
		return end
	case '{':
		return c.object(s, i, depth, nil)
	case '[':
		if depth >= MaxDepth {
			return -1
		}
		i = SkipSpace(s, i+1)
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
			i = SkipSpace(s, i+1)
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
			return validNumber(s, i, c.lax)
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
	i = SkipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return -1
		}
		end, esc := validString(s, i, c.lax)
		if end < 0 {
			return -1
		}
		key := s[i+1 : end-1]
		if esc {
			key = Unquote(key)
		}
		c.keys = append(c.keys, key)
		i = SkipSpace(s, end)
		if i >= len(s) || s[i] != ':' {
			return -1
		}
		v := SkipSpace(s, i+1)
		end = c.value(s, v, depth+1)
		if end < 0 {
			return -1
		}
		if member != nil {
			member(key, s[v:end])
		}
		if i = SkipSpace(s, end); i >= len(s) {
			return -1
		}
		if s[i] == '}' {
			d := c.duplicate(c.keys[start:])
			if d >= 0 && !c.hasDup {
				c.dup, c.hasDup = c.keys[start+d], true
			}
			clear(c.keys[start:])
			c.keys = c.keys[:start]
			if d >= 0 && !c.lax {
				return -1
			}
			return i + 1
		}
		if s[i] != ',' {
			return -1
		}
		i = SkipSpace(s, i+1)
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
// holds escapes, or -1. Lax, bytes that are not UTF-8 are accepted, as
// encoding/json accepts them (and rewrites them when decoding).
func validString(s string, i int, lax bool) (int, bool) {
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
			if r == utf8.RuneError && size == 1 && !lax {
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
				if DecodeU4(s[i:]) < 0 {
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

// validNumber returns the index after the number at s[i], or -1. Strict,
// a number beyond float64 is refused; lax, only its syntax is checked.
func validNumber(s string, i int, lax bool) int {
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
	if !lax && (exp || i-start > 300) {
		if _, err := strconv.ParseFloat(s[start:i], 64); err != nil {
			return -1
		}
	}
	return i
}

// duplicate returns the index of a key of one object that repeats an
// earlier one, or -1: pairwise for a few keys, through a small
// open-addressing table beyond.
func (c *Checker) duplicate(keys []string) int {
	n := len(keys)
	if n <= 16 {
		for i := 1; i < n; i++ {
			for j := range i {
				if keys[i] == keys[j] {
					return i
				}
			}
		}
		return -1
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
				return i
			}
		}
	}
	return -1
}
