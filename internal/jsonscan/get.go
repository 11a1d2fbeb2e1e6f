package jsonscan

import "strings"

// Lookup returns the text of the value at path in the valid JSON value s (space
// around it allowed): each element of path names a member of an object,
// the first of that name as gjson reads it; ok is false when a member is
// missing or a value on the way is not an object.
func Lookup(s string, path ...string) (val string, ok bool) {
	val = TrimSpace(s)
	for _, name := range path {
		if val == "" || val[0] != '{' {
			return "", false
		}
		found := false
		for i := 1; ; {
			k, v, next, more := NextMember(val, i)
			if !more {
				break
			}
			if k == name {
				val, found = v, true
				break
			}
			i = next
		}
		if !found {
			return "", false
		}
	}
	return val, true
}

// Text is a value's text as gjson's String gives it: a string decoded, null
// (or no value) empty, any other value its JSON text.
func Text(val string) string {
	switch {
	case val == "" || val == "null":
		return ""
	case val[0] == '"':
		body := val[1 : len(val)-1]
		for i := 0; i < len(body); i++ {
			if body[i] == '\\' {
				return Unquote(body)
			}
		}
		return body
	}
	return val
}

// Field is the Text of the value at path in untrusted bytes b, or "" when b
// is not JSON encoding/json accepts: what the source clients read from
// run, poll and snapshot answers. The text is a copy: b is often a pooled
// buffer, released right after.
func Field(b []byte, path ...string) string {
	if !ValidSyntax(b) {
		return ""
	}
	v, _ := Lookup(Bytes(b), path...)
	return strings.Clone(Text(v))
}
