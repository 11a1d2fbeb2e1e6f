package servicecheck

import (
	"regexp"
	"strings"

	"socialrouter/caddymodule/registry"
)

// DropReason says which expression of o's normalize program drops items,
// for a data item that gave no record: the `if … then empty` (or
// `select(…)`) that yields nothing, with its file:line:column in the
// operator's CUE file. A program with several such expressions is named
// by its first; one without any drops by yielding null.
func DropReason(o *registry.Offer) (at, why string) {
	src := o.Normalize.Source
	for _, word := range []string{"empty", "select"} {
		m := regexp.MustCompile(`(?:^|[^A-Za-z0-9_$.])(` + word + `)(?:[^A-Za-z0-9_]|$)`).FindStringSubmatchIndex(src)
		if m == nil {
			continue
		}
		start, end := m[2], m[3]
		if word == "select" {
			end = closeParen(src, end)
		} else if i := lastIf(src[:start]); i >= 0 {
			start = i
		}
		expr := strings.Join(strings.Fields(src[start:end]), " ")
		if len(expr) > 160 {
			expr = expr[:157] + "..."
		}
		return o.WordAt(src[m[2]:m[3]]), "dropped by " + expr
	}
	return o.NormalizeAt(), "the program yielded null or nothing"
}

// lastIf is the offset of the last `if` or `elif` keyword in s, -1 if none.
func lastIf(s string) int {
	locs := regexp.MustCompile(`(?:^|[^A-Za-z0-9_$.])(el)?if\s`).FindAllStringIndex(s, -1)
	if len(locs) == 0 {
		return -1
	}
	i := locs[len(locs)-1][0]
	for i < len(s) && !strings.HasPrefix(s[i:], "if") && !strings.HasPrefix(s[i:], "elif") {
		i++
	}
	return i
}

// closeParen is the offset after the parenthesis closing the one that
// opens at or after i (len(s) when unbalanced).
func closeParen(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(s)
}
