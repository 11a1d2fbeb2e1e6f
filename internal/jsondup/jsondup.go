// Package jsondup finds duplicated keys in JSON objects. encoding/json
// keeps the last of duplicated keys, so {"url": "nope", "url": "<valid>"}
// would pass validation of one value and mean another to a reader (or a
// proxy) that keeps the first: an API that bills must refuse it.
package jsondup

import (
	"encoding/json"

	"socialrouter/internal/jsonscan"
)

// Find returns the first key that appears twice in one object of the JSON
// text b, at any depth, and whether there is one. Keys are compared
// decoded ("\u0075rl" is "url"). Invalid JSON reports no duplicate:
// decoding it fails on its own.
func Find(b []byte) (string, bool) {
	if !json.Valid(b) {
		return "", false
	}
	return find(jsonscan.TrimSpace(jsonscan.Bytes(b)))
}

// find walks the valid JSON value s (no surrounding space).
func find(s string) (string, bool) {
	switch s[0] {
	case '{':
		seen := map[string]bool{}
		for i := 1; ; {
			k, v, next, ok := jsonscan.NextMember(s, i)
			if !ok {
				return "", false
			}
			if seen[k] {
				return k, true
			}
			seen[k] = true
			if k, dup := find(v); dup {
				return k, true
			}
			i = next
		}
	case '[':
		for i := 1; ; {
			v, next, ok := jsonscan.NextElem(s, i)
			if !ok {
				return "", false
			}
			if k, dup := find(v); dup {
				return k, true
			}
			i = next
		}
	}
	return "", false
}
