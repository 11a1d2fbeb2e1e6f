package normalize

import (
	"math"
	"strconv"
	"strings"

	"socialrouter/internal/jsonscan"
)

type kind uint8

// Kinds in jq's sort order (null < false < true < numbers < strings <
// arrays < objects).
const (
	kNull kind = iota
	kFalse
	kTrue
	kNum
	kStr
	kArr
	kObj
)

var kindNames = [...]string{"null", "boolean", "boolean", "number", "string", "array", "object"}

// value is one jq value. Raw values are JSON text of the item (s); the
// others are built by the plan: a string in s, a number in n (an int when
// isInt, else float64 bits), an array or object in c. A raw number is a
// float64, as encoding/json decodes it for gojq.
type value struct {
	k kind
	f flags
	n uint64
	s string
	c *comp
}

// flags of a value, in one byte so that a value and an error travel in
// registers.
type flags uint8

const (
	fRaw   flags = 1 << iota // s is JSON text of the item
	fInt                     // a number held as an int in n
	fPrune                   // an array or object seen through del(.. | nulls)
)

func (v value) raw() bool    { return v.f&fRaw != 0 }
func (v value) isInt() bool  { return v.f&fInt != 0 }
func (v value) pruned() bool { return v.f&fPrune != 0 }

// withPrune marks v pruned when p is and v is an array or object.
func (v value) withPrune(p bool) value {
	if p && v.k >= kArr {
		v.f |= fPrune
	}
	return v
}

// comp is a built array (arr) or object (keys and vals, parallel; sorted
// when the keys are in byte order). comps are never modified once built.
type comp struct {
	arr    []value
	keys   []string
	vals   []value
	sorted bool
	// quoted is keys as the record writes them ("key":) when they are a
	// node's constant keys, encoded once at compile time.
	quoted []string
}

var (
	vNull  = value{k: kNull}
	vFalse = value{k: kFalse}
	vTrue  = value{k: kTrue}
)

func boolValue(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

func strValue(s string) value    { return value{k: kStr, s: s} }
func intValue(i int) value       { return value{k: kNum, f: fInt, n: uint64(int64(i))} }
func floatValue(f float64) value { return value{k: kNum, n: math.Float64bits(f)} }

func (v value) truthy() bool { return v.k >= kTrue }

// str is the content of a string value.
func (v value) str() string {
	if !v.raw() {
		return v.s
	}
	body := v.s[1 : len(v.s)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body
	}
	return jsonscan.Unquote(body)
}

// float is a number as float64.
func (v value) float() float64 {
	switch {
	case v.raw():
		f, _ := strconv.ParseFloat(v.s, 64)
		return f
	case v.isInt():
		return float64(int64(v.n))
	}
	return math.Float64frombits(v.n)
}

func (v value) int() int { return int(int64(v.n)) }

// rawValue types a JSON text of the item.
func rawValue(s string) value {
	switch s[0] {
	case '{':
		return value{k: kObj, f: fRaw, s: s}
	case '[':
		return value{k: kArr, f: fRaw, s: s}
	case '"':
		return value{k: kStr, f: fRaw, s: s}
	case 't':
		return vTrue
	case 'f':
		return vFalse
	case 'n':
		return vNull
	}
	return value{k: kNum, f: fRaw, s: s}
}
