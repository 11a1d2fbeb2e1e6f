package registry

import "regexp"

// The timestamp patterns of schemas/records.cue (#Timestamp and
// #UTCTimestamp), as the record schemas carry them. Nearly every record has
// one or more timestamps, and regexp's one-pass matcher spent ~350 ns on each
// (a third of CheckRecord under make bench's load); the hand-written matchers
// below accept exactly the same strings (TestPatternMatchers compares them
// with regexp on every one-byte edit of valid timestamps, and a fuzz target
// goes further). A declared pattern that is not one of these keeps regexp.
const (
	timestampPattern    = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$`
	utcTimestampPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$`
)

// patternMatchers are the hand-written equivalents of known patterns.
var patternMatchers = map[string]func([]byte) bool{
	timestampPattern:    func(b []byte) bool { return matchTimestamp(b, false) },
	utcTimestampPattern: func(b []byte) bool { return matchTimestamp(b, true) },
}

// compilePattern returns the matcher of a schema's pattern: a hand-written
// one for a known pattern, else the compiled regexp's.
func compilePattern(p string) (func([]byte) bool, *regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, nil, err
	}
	if m, ok := patternMatchers[p]; ok {
		return m, re, nil
	}
	return re.Match, re, nil
}

// timestampLayout is the fixed part of a timestamp: d is a digit, any other
// byte stands for itself.
const timestampLayout = "dddd-dd-ddTdd:dd:dd"

// matchTimestamp matches timestampPattern, or utcTimestampPattern when
// utcOnly.
func matchTimestamp(b []byte, utcOnly bool) bool {
	if len(b) < len(timestampLayout)+1 {
		return false
	}
	for i := 0; i < len(timestampLayout); i++ {
		if c := timestampLayout[i]; c == 'd' {
			if !isDigit(b[i]) {
				return false
			}
		} else if b[i] != c {
			return false
		}
	}
	rest := b[len(timestampLayout):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && n <= 9 && isDigit(rest[n]) {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	if len(rest) == 1 {
		return rest[0] == 'Z'
	}
	return !utcOnly && len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') &&
		isDigit(rest[1]) && isDigit(rest[2]) && rest[3] == ':' && isDigit(rest[4]) && isDigit(rest[5])
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
