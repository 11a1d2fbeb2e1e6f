package registry

import (
	"bytes"
	"encoding/json"
)

// scanner reads one JSON document, assumed well formed (a normalizer's
// output), reporting malformed bytes as violations rather than panicking.
type scanner struct {
	b []byte
	i int
}

var errMalformed = &Violation{Reason: "malformed JSON"}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str reads a string at s.i (on its quote) and returns its raw content and
// whether it holds escapes.
func (s *scanner) str() (raw []byte, escaped bool, ok bool) {
	start := s.i + 1
	// Short strings (keys, ids) end within a few bytes, read one by one;
	// a longer one without escapes (text, URLs) ends at its first quote,
	// found with the absence of a backslash by IndexByte's vector loop.
	j := start
	for short := min(len(s.b), start+16); j < short; j++ {
		switch s.b[j] {
		case '\\':
			return s.escapedStr(start, j)
		case '"':
			s.i = j + 1
			return s.b[start:j], false, true
		}
	}
	if q := bytes.IndexByte(s.b[j:], '"'); q >= 0 && bytes.IndexByte(s.b[j:j+q], '\\') < 0 {
		s.i = j + q + 1
		return s.b[start : j+q], false, true
	}
	return s.escapedStr(start, j)
}

// escapedStr is str from s.b[j] on, for a string that may hold escapes:
// from escape to escape by IndexByte's vector loop, the next quote found
// once and looked for again only when an escape passes it (a text's
// newlines and quotes, escaped, were read byte by byte: a tenth of the
// check of a post's record).
func (s *scanner) escapedStr(start, j int) (raw []byte, escaped bool, ok bool) {
	q := -1 // the first quote at or after j, once found
	for j < len(s.b) {
		if q < j {
			k := bytes.IndexByte(s.b[j:], '"')
			if k < 0 {
				return nil, false, false
			}
			q = j + k
		}
		k := bytes.IndexByte(s.b[j:q], '\\')
		if k < 0 {
			s.i = q + 1
			return s.b[start:q], escaped, true
		}
		escaped = true
		j += k + 2 // the backslash and the byte it escapes
	}
	return nil, false, false
}

// text returns the decoded string of a raw string content.
func text(raw []byte, escaped bool) string {
	if !escaped {
		return string(raw)
	}
	var out string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	if json.Unmarshal(q, &out) != nil {
		return string(raw)
	}
	return out
}

// kind is the JSON type of the value at s.i.
func (s *scanner) kind() uint8 {
	if s.i >= len(s.b) {
		return 0
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return tObject
	case c == '[':
		return tArray
	case c == '"':
		return tString
	case c == 't' || c == 'f':
		return tBool
	case c == 'n':
		return tNull
	case c == '-' || (c >= '0' && c <= '9'):
		return tNumber
	}
	return 0
}

func kindName(k uint8) string {
	switch k {
	case tObject:
		return "an object"
	case tArray:
		return "an array"
	case tString:
		return "a string"
	case tBool:
		return "a boolean"
	case tNull:
		return "null"
	case tInteger:
		return "an integer"
	case tNumber:
		return "a number"
	}
	return "no JSON value"
}
