package registry

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Violation is the first way a record is off its declared schema: the
// field (a dotted path, "" for the record itself) and why.
type Violation struct {
	Field  string
	Reason string
}

func (v *Violation) Error() string {
	if v.Field == "" {
		return v.Reason
	}
	return v.Field + ": " + v.Reason
}

// CheckRecord checks one normalized record (JSON, as NormalizeItem returns
// it) against the service's record schema, compiled once at load from the
// same JSON Schema the OpenAPI document publishes. It returns nil when the
// record conforms. It reads the bytes in one pass without decoding them, so
// it is cheap enough to run on every record before it is served or billed.
func (s *Service) CheckRecord(rec []byte) *Violation {
	if s.check == nil {
		return &Violation{Reason: "the service has no compiled record schema"}
	}
	sc := scanner{b: rec}
	sc.ws()
	v := s.check.value(&sc)
	if v == nil {
		sc.ws()
		if sc.i != len(sc.b) {
			v = &Violation{Reason: "trailing bytes after the record"}
		}
	}
	return v
}

// JSON types as a bit set.
const (
	tNull uint8 = 1 << iota
	tBool
	tInteger
	tNumber // any number, integers included
	tString
	tArray
	tObject
)

// checkNode is one compiled schema. A nil *checkNode accepts anything.
type checkNode struct {
	types    uint8 // 0: any type
	typeName string
	props    map[string]*checkNode
	closed   bool       // additionalProperties: false
	extra    *checkNode // additionalProperties schema
	required []string
	items    *checkNode
	pattern  *regexp.Regexp    // for messages; match decides
	match    func([]byte) bool // the pattern's matcher (compilePattern)
	enum     map[string]bool   // members: strings as themselves, others JSON-encoded
	anyOf    []*checkNode
	allOf    []*checkNode
}

// value checks the value at s.i against n and moves past it.
func (n *checkNode) value(s *scanner) *Violation {
	k := s.kind()
	if k == 0 {
		return errMalformed
	}
	if n != nil && len(n.anyOf) > 0 {
		start := s.i
		may := k
		if k == tNumber {
			may |= tInteger
		}
		var first *Violation
		matched := false
		for _, alt := range n.anyOf {
			if alt != nil && alt.types != 0 && alt.types&may == 0 {
				continue // a branch of another type: skip it without building its violation
			}
			s.i = start
			v := alt.value(s)
			if v == nil {
				matched = true
				break
			}
			if first == nil {
				first = v
			}
		}
		if !matched {
			if first == nil {
				var want []string
				for _, alt := range n.anyOf {
					want = append(want, alt.typeName)
				}
				first = &Violation{Reason: fmt.Sprintf("want %s, got %s", strings.Join(want, " or "), kindName(k))}
			}
			return first
		}
		s.i = start
	}
	if n != nil && len(n.allOf) > 0 {
		start := s.i
		for _, all := range n.allOf {
			s.i = start
			if v := all.value(s); v != nil {
				return v
			}
		}
		s.i = start
	}
	switch k {
	case tObject:
		return n.object(s)
	case tArray:
		return n.array(s)
	case tString:
		raw, esc, ok := s.str()
		if !ok {
			return errMalformed
		}
		if n == nil {
			return nil
		}
		if v := n.typed(tString); v != nil {
			return v
		}
		if esc && (n.pattern != nil || n.enum != nil) {
			raw = []byte(text(raw, esc))
		}
		if n.match != nil && !n.match(raw) {
			return &Violation{Reason: fmt.Sprintf("%q does not match %s", raw, n.pattern)}
		}
		if n.enum != nil && !n.enum[string(raw)] {
			return &Violation{Reason: fmt.Sprintf("%q is not one of the declared values", raw)}
		}
		return nil
	case tBool, tNull:
		lit := "null"
		if k == tBool {
			lit = "true"
			if s.b[s.i] == 'f' {
				lit = "false"
			}
		}
		if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			return errMalformed
		}
		s.i += len(lit)
		if n == nil {
			return nil
		}
		if v := n.typed(k); v != nil {
			return v
		}
		if n.enum != nil && !n.enum[lit] {
			return &Violation{Reason: lit + " is not one of the declared values"}
		}
		return nil
	}
	start := s.i
	for s.i < len(s.b) && strings.IndexByte("+-.eE0123456789", s.b[s.i]) >= 0 {
		s.i++
	}
	tok := s.b[start:s.i]
	if len(tok) == 0 {
		return errMalformed
	}
	if n == nil {
		return nil
	}
	// An integer is written without fraction or exponent, as CUE and a
	// client decoding into an integer type read it: 12.0 is not one.
	k = tNumber
	if bytes.IndexAny(tok, ".eE") < 0 {
		k |= tInteger
	}
	if n.types != 0 && n.types&k == 0 {
		return &Violation{Reason: fmt.Sprintf("want %s, got the number %s", n.typeName, tok)}
	}
	if n.enum != nil && !n.enum[string(tok)] {
		return &Violation{Reason: fmt.Sprintf("%s is not one of the declared values", tok)}
	}
	return nil
}

// typed checks the value kind against the declared types.
func (n *checkNode) typed(k uint8) *Violation {
	if n.types == 0 || n.types&k != 0 {
		return nil
	}
	return &Violation{Reason: fmt.Sprintf("want %s, got %s", n.typeName, kindName(k))}
}

func (n *checkNode) object(s *scanner) *Violation {
	if n != nil {
		if v := n.typed(tObject); v != nil {
			return v
		}
	}
	s.i++              // {
	var found []string // required fields seen, only when some are
	for {
		s.ws()
		if s.i >= len(s.b) {
			return errMalformed
		}
		if s.b[s.i] == '}' {
			s.i++
			break
		}
		if s.b[s.i] == ',' {
			s.i++
			s.ws()
		}
		if s.kind() != tString {
			return errMalformed
		}
		raw, esc, ok := s.str()
		if !ok {
			return errMalformed
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errMalformed
		}
		s.i++
		s.ws()
		if n == nil {
			if v := (*checkNode)(nil).value(s); v != nil {
				return v
			}
			continue
		}
		var sub *checkNode
		var declared bool
		if esc {
			sub, declared = n.props[text(raw, esc)]
		} else {
			sub, declared = n.props[string(raw)] // no allocation
		}
		switch {
		case declared:
			if n.required != nil {
				found = append(found, text(raw, esc))
			}
		case n.closed:
			return &Violation{Field: text(raw, esc), Reason: "undeclared field"}
		default:
			sub = n.extra
		}
		if v := sub.value(s); v != nil {
			return v.in(text(raw, esc))
		}
	}
	if n != nil {
		for _, r := range n.required {
			if !slices.Contains(found, r) {
				return &Violation{Field: r, Reason: "required field missing"}
			}
		}
	}
	return nil
}

func (n *checkNode) array(s *scanner) *Violation {
	if n != nil {
		if v := n.typed(tArray); v != nil {
			return v
		}
	}
	var items *checkNode
	if n != nil {
		items = n.items
	}
	s.i++ // [
	for idx := 0; ; idx++ {
		s.ws()
		if s.i >= len(s.b) {
			return errMalformed
		}
		if s.b[s.i] == ']' {
			s.i++
			return nil
		}
		if s.b[s.i] == ',' {
			s.i++
			s.ws()
		}
		if v := items.value(s); v != nil {
			return v.at(idx)
		}
	}
}

// in prefixes the violation's field with an object key.
func (v *Violation) in(name string) *Violation {
	if v == errMalformed {
		return v
	}
	out := *v
	switch {
	case out.Field == "":
		out.Field = name
	case out.Field[0] == '[':
		out.Field = name + out.Field
	default:
		out.Field = name + "." + out.Field
	}
	return &out
}

// at prefixes the violation's field with an array index.
func (v *Violation) at(i int) *Violation {
	if v == errMalformed {
		return v
	}
	out := *v
	idx := "[" + strconv.Itoa(i) + "]"
	if out.Field == "" || out.Field[0] == '[' {
		out.Field = idx + out.Field
	} else {
		out.Field = idx + "." + out.Field
	}
	return &out
}
