// Package jsondup finds duplicated keys in JSON objects. encoding/json
// keeps the last of duplicated keys, so {"url": "nope", "url": "<valid>"}
// would pass validation of one value and mean another to a reader (or a
// proxy) that keeps the first: an API that bills must refuse it.
package jsondup

import (
	"bytes"
	"encoding/json"
	"io"
)

// Find returns the first key that appears twice in one object of the JSON
// text b, at any depth, and whether there is one. Invalid JSON reports no
// duplicate: decoding it fails on its own.
func Find(b []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		keys  map[string]bool // nil for an array
		isKey bool            // the next token of this object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.keys != nil && top.isKey {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return k, true
				}
				top.keys[k] = true
				top.isKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, isKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object the next token is a key.
		if len(stack) > 0 && stack[len(stack)-1].keys != nil {
			stack[len(stack)-1].isKey = true
		}
	}
}
