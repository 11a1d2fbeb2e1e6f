package registry

import (
	"regexp"
	"testing"
)

// TestPatternMatchers holds each hand-written matcher to its regexp on
// valid timestamps and on every one-byte replacement, deletion and
// insertion of them.
func TestPatternMatchers(t *testing.T) {
	valid := []string{
		"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.1Z", "2026-01-02T03:04:05.123456789Z",
		"2026-01-02T03:04:05+02:00", "2026-01-02T03:04:05.000-11:30", "0000-99-99T99:99:99Z",
	}
	invalid := []string{
		"", "Z", "2026-01-02", "2026-01-02T03:04:05", "2026-01-02T03:04:05.Z", "2026-01-02T03:04:05.1234567890Z",
		"2026-01-02 03:04:05Z", "2026-01-02T03:04:05z", "2026-01-02T03:04:05+0200", "2026-01-02T03:04:05Z\n",
		"2026-01-02T03:04:05+02:00Z", "2026-01-02T03:04:05ZZ", "٢٠٢٦-01-02T03:04:05Z",
	}
	bytes := []byte("09aZz.:-+T \n\x00\xff")
	for pattern, match := range patternMatchers {
		re := regexp.MustCompile(pattern)
		cases := append([]string(nil), invalid...)
		for _, v := range valid {
			cases = append(cases, v)
			for i := 0; i <= len(v); i++ {
				if i < len(v) {
					cases = append(cases, v[:i]+v[i+1:])
				}
				for _, c := range bytes {
					if i < len(v) {
						cases = append(cases, v[:i]+string(c)+v[i+1:])
					}
					cases = append(cases, v[:i]+string(c)+v[i:])
				}
			}
		}
		accepted := 0
		for _, c := range cases {
			want := re.MatchString(c)
			if got := match([]byte(c)); got != want {
				t.Errorf("%s on %q: %v, regexp says %v", pattern, c, got, want)
			}
			if want {
				accepted++
			}
		}
		if accepted == 0 || accepted == len(cases) {
			t.Errorf("%s: %d of %d cases accepted: the cases do not tell the matcher apart", pattern, accepted, len(cases))
		}
	}
}

// FuzzPatternMatchers compares the matchers with their regexps on any input.
func FuzzPatternMatchers(f *testing.F) {
	f.Add("2026-01-02T03:04:05.123+02:00")
	f.Add("2026-01-02T03:04:05Z")
	res := map[string]*regexp.Regexp{}
	for p := range patternMatchers {
		res[p] = regexp.MustCompile(p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for p, match := range patternMatchers {
			if got, want := match([]byte(s)), res[p].MatchString(s); got != want {
				t.Fatalf("%s on %q: %v, regexp says %v", p, s, got, want)
			}
		}
	})
}

// TestDeclaredTimestampsUseMatchers: the record schemas carry the
// timestamp patterns exactly as patternMatchers names them, so a change to
// schemas/records.cue cannot silently send every timestamp back to regexp.
func TestDeclaredTimestampsUseMatchers(t *testing.T) {
	seen := map[string]bool{}
	var walk func(n *checkNode, depth int)
	walk = func(n *checkNode, depth int) {
		if n == nil || depth > 20 {
			return
		}
		if n.pattern != nil {
			if _, ok := patternMatchers[n.pattern.String()]; ok {
				seen[n.pattern.String()] = true
			}
		}
		for _, c := range n.props {
			walk(c, depth+1)
		}
		walk(n.extra, depth+1)
		walk(n.items, depth+1)
		for _, c := range append(append([]*checkNode(nil), n.anyOf...), n.allOf...) {
			walk(c, depth+1)
		}
	}
	for _, s := range declared(t).Services {
		walk(s.check, 0)
	}
	for p := range patternMatchers {
		if !seen[p] {
			t.Errorf("no declared record field has the pattern %s", p)
		}
	}
}
