package settle

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// RunAPIJSON turns a stored run document, which the caller owns, into the
// run's API JSON: in place when it has the shape Settle writes, by decoding
// and encoding it otherwise.
func RunAPIJSON(doc []byte) ([]byte, error) {
	if api, ok := cutScope(doc); ok {
		return api, nil
	}
	r, err := DecodeRun(doc)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding run %s: %v", r.ID, err)
	}
	return b, nil
}

// The scope members a stored run document ends with, in reverse order.
var (
	keyIDMember     = []byte(`,"key_id":`)
	accountIDMember = []byte(`,"account_id":`)
)

// cutScope returns the API form of a stored run document, reusing doc's
// memory. A run is stored as the JSON of the API form with the scope
// members appended, `…,"account_id":"…"}` or `…,"account_id":"…","key_id":"…"}`
// (json.Marshal of settle's storedRun, which embeds runs.Run first), so
// cutting those members off leaves the bytes json.Marshal(runs.Run) gives.
// ok is false, and doc untouched, for a document of any other shape.
//
// It reads the document backwards over at most two JSON strings: in valid
// JSON a quote is a string's opening quote when an even number of
// backslashes precedes it, so no byte of the records is looked at.
func cutScope(doc []byte) (api []byte, ok bool) {
	n := len(doc)
	if n < 2 || doc[0] != '{' || doc[n-1] != '}' {
		return nil, false
	}
	cut := n - 1
	if at, ok := memberStart(doc[:cut], keyIDMember); ok {
		cut = at
	}
	at, ok := memberStart(doc[:cut], accountIDMember)
	if !ok || at < 1 {
		return nil, false
	}
	doc[at] = '}'
	return doc[:at+1], true
}

// memberStart reports where p ends with the member name (given with its
// leading comma and trailing colon) followed by a JSON string.
func memberStart(p, name []byte) (int, bool) {
	end := len(p) - 1
	if end < 1 || p[end] != '"' || escaped(p, end) {
		return 0, false
	}
	for i := end - 1; i >= 0; i-- {
		if p[i] != '"' || escaped(p, i) {
			continue
		}
		if !bytes.HasSuffix(p[:i], name) {
			return 0, false
		}
		return i - len(name), true
	}
	return 0, false
}

// escaped reports whether the quote at p[i] is escaped: preceded by an odd
// number of backslashes.
func escaped(p []byte, i int) bool {
	bs := 0
	for j := i - 1; j >= 0 && p[j] == '\\'; j-- {
		bs++
	}
	return bs%2 == 1
}
