package normalize

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The program's own helpers (programFunctions), on plan values. They
// mirror toNum, toInt, toISO and nonEmpty exactly; a test holds them to it.

// numOfString is toNum of a string.
func numOfString(x string) value {
	f, ok := parseNumString(x)
	if !ok {
		return vNull
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return intValue(int(f))
	}
	return floatValue(f)
}

func bToNum(_ *env, v value) (value, error) {
	switch v.k {
	case kNum:
		return v, nil
	case kStr:
		return numOfString(v.str()), nil
	}
	return vNull, nil
}

func bToInt(e *env, v value) (value, error) {
	n, _ := bToNum(e, v)
	switch {
	case n.k != kNum:
		return vNull, nil
	case n.isInt():
		return n, nil
	}
	if r, ok := roundInt(n.float()); ok {
		return intValue(r), nil
	}
	return vNull, nil
}

func bISO8601(e *env, v value) (value, error) {
	var t time.Time
	switch v.k {
	case kNum:
		if v.isInt() {
			t = fromEpoch(float64(v.int()))
		} else {
			t = fromEpoch(v.float())
		}
	case kStr:
		s := strings.TrimSpace(v.str())
		if mayBeFloat(s) {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				t = fromEpoch(f)
				break
			}
		}
		t = parseLayouts(s)
	}
	if t.IsZero() {
		return vNull, nil
	}
	b := appendISO(e.bytes[:0], t)
	e.bytes = b[:0]
	return strValue(e.keep(b)), nil
}

// mayBeFloat is false when strconv.ParseFloat certainly rejects s: a sign
// elsewhere than first or after an exponent letter, or a character no
// float syntax has.
func mayBeFloat(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+', '-':
			if i > 0 {
				if p := s[i-1] | 0x20; p != 'e' && p != 'p' {
					return false
				}
			}
		case ' ', ':', ',', '/':
			return false
		}
	}
	return true
}

// parseLayouts is toISO's loop over timeLayouts. Every layout starts
// with a four-digit year and "-" at 4 and 7, or with a weekday and "," at
// 3; a string shaped YYYY-MM-DD… can only match the layouts that continue
// as it does, so only those are tried (in the same order, with the same
// result), and a string of neither shape matches none.
func parseLayouts(s string) time.Time {
	layouts := timeLayouts
	switch {
	case len(s) >= 10 && s[4] == '-' && s[7] == '-':
		switch {
		case len(s) == 10:
			layouts = isoDateOnly
		case s[10] == 'T':
			layouts = isoDateT
		case s[10] == ' ':
			layouts = isoDateSpace
		}
	case len(s) < 4 || s[3] != ',':
		return time.Time{}
	}
	for _, l := range layouts {
		if p, err := time.Parse(l, s); err == nil {
			return p
		}
	}
	return time.Time{}
}

// The timeLayouts that a YYYY-MM-DD string of length 10, or followed by
// 'T' or ' ', can match; TestFastPathLayouts keeps them in step.
var (
	isoDateOnly  = []string{"2006-01-02"}
	isoDateT     = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04:05.000Z0700"}
	isoDateSpace = []string{"2006-01-02 15:04:05"}
)

func bNonEmpty(_ *env, v value) (value, error) {
	switch v.k {
	case kStr:
		if v.s == "" || v.raw() && len(v.s) == 2 {
			return vNull, nil
		}
	case kArr, kObj:
		switch {
		case v.pruned():
			return vNull, errBail
		case v.raw():
			if rawEmpty(v.s) {
				return vNull, nil
			}
		case v.k == kArr && len(v.c.arr) == 0, v.k == kObj && len(v.c.keys) == 0:
			return vNull, nil
		}
	}
	return v, nil
}

var fn0s = map[string]func(*env, value) (value, error){
	"type":           bType,
	"not":            bNot,
	"length":         bLength,
	"tostring":       bToString,
	"tonumber":       bToNumber,
	"ascii_downcase": asciiCase(true),
	"ascii_upcase":   asciiCase(false),
	"first":          bFirst,
	"last":           bLast,
	"keys":           bKeys,
	"to_entries":     bToEntries,
	"from_entries":   bFromEntries,
	"toint":          bToInt,
	"tonum":          bToNum,
	"iso8601":        bISO8601,
	"nonempty":       bNonEmpty,
}

var fn1s = map[string]func(*env, value, value) (value, error){
	"split":      bSplit,
	"join":       bJoin,
	"ltrimstr":   bLtrimstr,
	"rtrimstr":   bRtrimstr,
	"startswith": bStartswith,
	"endswith":   bEndswith,
}

func kinds(ks ...kind) *typeNode {
	n := &typeNode{}
	for _, k := range ks {
		n.keep[k] = true
	}
	return n
}

var typeFilters = map[string]*typeNode{
	"objects":   kinds(kObj),
	"arrays":    kinds(kArr),
	"strings":   kinds(kStr),
	"numbers":   kinds(kNum),
	"booleans":  kinds(kFalse, kTrue),
	"nulls":     kinds(kNull),
	"values":    kinds(kFalse, kTrue, kNum, kStr, kArr, kObj),
	"scalars":   kinds(kNull, kFalse, kTrue, kNum, kStr),
	"iterables": kinds(kArr, kObj),
}
