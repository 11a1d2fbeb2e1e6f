package registry

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// match reports whether the (already trimmed) input matches a, and the
// normalized form: a scheme-less URL that matches once https:// is prepended
// is normalized that way.
func (a *Accept) match(in, kind string) (string, bool) {
	if a.MaxLength > 0 && utf8.RuneCountInString(in) > a.MaxLength {
		return "", false
	}
	if a.re.MatchString(in) {
		return in, true
	}
	if kind == KindURL && !schemeRE.MatchString(in) {
		if u := "https://" + in; a.re.MatchString(u) {
			return u, true
		}
	}
	return "", false
}

// MatchInput trims in and matches it against the accepted formats, returning
// the normalized input. A URL's scheme and host are case-insensitive
// (RFC 3986 §3.1, §3.2.2) while the declared patterns are written in lower
// case, so a url-kind input that matches only once they are lowered
// ("HTTPS://WWW.LinkedIn.com/in/Ann") is normalized that way; its path
// keeps its case.
func (s *Service) MatchInput(in string) (string, bool) {
	in = strings.TrimSpace(in)
	if in == "" {
		return "", false
	}
	if n, ok := s.matchAccepts(in); ok {
		return n, true
	}
	if s.InputKind == KindURL {
		if lower := lowerAuthority(in); lower != in {
			return s.matchAccepts(lower)
		}
	}
	return "", false
}

// matchAccepts matches in against each accepted format in turn.
func (s *Service) matchAccepts(in string) (string, bool) {
	for _, a := range s.Accepts {
		if n, ok := a.match(in, s.InputKind); ok {
			return n, true
		}
	}
	return "", false
}

// lowerAuthority lowers a URL's scheme and the authority after it (or, with
// no scheme, what comes before the first '/', '?' or '#').
func lowerAuthority(in string) string {
	prefix, rest := "", in
	if m := schemeRE.FindStringIndex(in); m != nil {
		prefix, rest = strings.ToLower(in[:m[1]]), in[m[1]:]
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	return prefix + strings.ToLower(rest[:end]) + rest[end:]
}

// MaxInputLength is the longest input, in characters, any accepted format
// takes: an input is valid when it matches any one, so it is capped only
// when every format declares a max_length (0: no cap).
func (s *Service) MaxInputLength() int {
	longest := 0
	for _, a := range s.Accepts {
		if a.MaxLength <= 0 {
			return 0
		}
		longest = max(longest, a.MaxLength)
	}
	return longest
}

// InputField is the array field this service takes ("urls" or "queries").
func (s *Service) InputField() string {
	if s.InputKind == KindQuery {
		return "queries"
	}
	return "urls"
}

// SingleInputField is the single-input form ("url" or "query").
func (s *Service) SingleInputField() string {
	if s.InputKind == KindQuery {
		return "query"
	}
	return "url"
}

// OptionProblem is one rejected option.
type OptionProblem struct {
	Name    string `json:"name"`
	Problem string `json:"problem"`
}

// ValidateOptions checks raw options strictly against the declaration: an
// unknown key, a wrong type or a value outside the enum is a problem. It
// returns the options with declared defaults filled in.
func (s *Service) ValidateOptions(raw map[string]json.RawMessage) (map[string]any, []OptionProblem) {
	out := map[string]any{}
	var problems []OptionProblem
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		opt, ok := s.optionsByName[k]
		if !ok {
			problems = append(problems, OptionProblem{Name: k, Problem: "unknown option"})
			continue
		}
		var v any
		if err := json.Unmarshal(raw[k], &v); err != nil {
			problems = append(problems, OptionProblem{Name: k, Problem: "not valid JSON"})
			continue
		}
		cv, err := opt.check(v)
		if err != nil {
			problems = append(problems, OptionProblem{Name: k, Problem: err.Error()})
			continue
		}
		out[k] = cv
	}
	for _, opt := range s.Options {
		if _, set := out[opt.Name]; !set && opt.HasDefault {
			out[opt.Name] = opt.Default
		}
	}
	return out, problems
}

// Expect describes the accepted values of an option, for error messages.
func (o *Option) Expect() string {
	switch o.Type {
	case "boolean":
		return "true or false"
	case "integer":
		return "an integer"
	case "enum":
		return "one of " + strings.Join(o.Values, ", ")
	case "date":
		return "a date YYYY-MM-DD"
	}
	return "a string"
}

// check validates one decoded JSON value against the option's type and
// returns it in canonical form.
func (o *Option) check(v any) (any, error) {
	bad := fmt.Errorf("must be %s", o.Expect())
	switch o.Type {
	case "boolean":
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, bad
	case "integer":
		f, ok := v.(float64)
		if !ok {
			if i, isInt := v.(int); isInt {
				return i, nil
			}
			if i, isInt := v.(int64); isInt {
				return int(i), nil
			}
			return nil, bad
		}
		if f != float64(int64(f)) {
			return nil, bad
		}
		return int(f), nil
	case "enum":
		s, ok := v.(string)
		if !ok {
			return nil, bad
		}
		for _, x := range o.Values {
			if x == s {
				return s, nil
			}
		}
		return nil, bad
	case "date":
		s, ok := v.(string)
		if !ok {
			return nil, bad
		}
		if _, err := time.Parse("2006-01-02", s); err != nil {
			return nil, bad
		}
		return s, nil
	default: // string
		s, ok := v.(string)
		if !ok {
			return nil, bad
		}
		return s, nil
	}
}
