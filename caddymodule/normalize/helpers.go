package normalize

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/itchyny/gojq"
)

// programFunctions are the helpers normalizers may call beside jq's
// builtins:
//
//	toint      number or numeric string ("1,234", "10K+") → integer, else null
//	tonum      number or numeric string → number, else null
//	iso8601    epoch seconds or milliseconds, or a date/time string → ISO 8601 UTC, else null
//	nonempty   null for "", [] or {}, the value otherwise
func programFunctions() []gojq.CompilerOption {
	return []gojq.CompilerOption{
		gojq.WithFunction("toint", 0, 0, func(v any, _ []any) any { return toInt(v) }),
		gojq.WithFunction("tonum", 0, 0, func(v any, _ []any) any { return toNum(v) }),
		gojq.WithFunction("iso8601", 0, 0, func(v any, _ []any) any { return toISO(v) }),
		gojq.WithFunction("nonempty", 0, 0, func(v any, _ []any) any { return nonEmpty(v) }),
	}
}

func nonEmpty(v any) any {
	switch x := v.(type) {
	case string:
		if x == "" {
			return nil
		}
	case []any:
		if len(x) == 0 {
			return nil
		}
	case map[string]any:
		if len(x) == 0 {
			return nil
		}
	}
	return v
}

func toNum(v any) any {
	switch x := v.(type) {
	case int:
		return x
	case float64:
		return x
	case string:
		f, ok := parseNumString(x)
		if !ok {
			return nil
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int(f)
		}
		return f
	}
	return nil
}

// parseNumString reads a number written for people: thousands commas, a
// trailing "+", K/M/B multipliers and a trailing unit in words ("10,001+",
// "1.2K", "1,234 followers", "12.5K views"). Shared by toNum and the
// normalizer plan, so both engines read the same strings the same way.
func parseNumString(x string) (float64, bool) {
	s := strings.TrimSpace(strings.ReplaceAll(x, ",", ""))
	if f, ok := parseNumToken(s); ok {
		return f, true
	}
	// "<number> <words>": upstreams sometimes send a count as the text a
	// page shows. Only letters may follow, so dates, times, ranges and
	// numbers with spaces stay unread.
	num, unit, ok := strings.Cut(s, " ")
	if !ok {
		return 0, false
	}
	unit = strings.TrimSpace(unit)
	if m, rest, _ := strings.Cut(unit, " "); len(m) == 1 && strings.ContainsAny(m, "KkMmBb") {
		num, unit = num+m, strings.TrimSpace(rest) // "1.2 M views"
	}
	if unit != "" && !isWords(unit) {
		return 0, false
	}
	return parseNumToken(num)
}

// isWords reports whether s is letters and spaces only, with a letter.
func isWords(s string) bool {
	letter := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			letter = true
		case r != ' ':
			return false
		}
	}
	return letter
}

// parseNumToken is parseNumString for one token without commas.
func parseNumToken(s string) (float64, bool) {
	mult := 1.0
	s = strings.TrimSuffix(s, "+")
	switch {
	case strings.HasSuffix(s, "K") || strings.HasSuffix(s, "k"):
		mult, s = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "M") || strings.HasSuffix(s, "m"):
		mult, s = 1e6, s[:len(s)-1]
	case strings.HasSuffix(s, "B") || strings.HasSuffix(s, "b"):
		mult, s = 1e9, s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f * mult, true
}

// toInt is toNum rounded to an integer, or null when that integer is
// beyond 2^53: a count no platform has, which int() would wrap to
// -9223372036854775808 (a scraped 5.5e32 "likes" did).
func toInt(v any) any {
	switch x := toNum(v).(type) {
	case int:
		return x
	case float64:
		if r, ok := roundInt(x); ok {
			return r
		}
	}
	return nil
}

// roundInt rounds f to an int when the result is within ±2^53 (exact in a
// float64, as JSON readers need it).
func roundInt(f float64) (int, bool) {
	r := math.Round(f)
	if !(math.Abs(r) < 1<<53) { // NaN too
		return 0, false
	}
	return int(r), true
}

var timeLayouts = []string{
	time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04:05.000Z0700",
	"2006-01-02", time.RFC1123Z, time.RFC1123,
}

func toISO(v any) any {
	var t time.Time
	switch x := v.(type) {
	case int:
		t = fromEpoch(float64(x))
	case float64:
		t = fromEpoch(x)
	case string:
		s := strings.TrimSpace(x)
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			t = fromEpoch(f)
			break
		}
		for _, l := range timeLayouts {
			if p, err := time.Parse(l, s); err == nil {
				t = p
				break
			}
		}
	}
	if t.IsZero() {
		return nil
	}
	return string(appendISO(nil, t))
}

// fromEpoch reads seconds, or milliseconds when the number is too large to
// be seconds of this era. Below 1e8 seconds (March 1973) a number is not a
// timestamp of anything scraped: a year ("2021"), a count or a 0 meaning
// unknown; it reads as no time, so the field is left out rather than
// dated 1970. Both engines call it, so they agree.
func fromEpoch(f float64) time.Time {
	if f < 1e8 || math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}
	}
	if f > 1e11 {
		return time.UnixMilli(int64(f))
	}
	return time.Unix(int64(f), int64((f-math.Trunc(f))*1e9))
}

// isoLayout is what the iso8601 helper writes: UTC, millisecond precision.
const isoLayout = "2006-01-02T15:04:05.000Z"

// appendISO appends t in isoLayout. It writes the digits itself: time's
// general formatter cost ~150 ns a timestamp, the plan's largest single
// builtin under make bench's load. Years outside 0000-9999 go to time's
// formatter, which writes them as it always has.
func appendISO(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, isoLayout)
	}
	hour, min, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(dst,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}
