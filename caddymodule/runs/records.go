package runs

import (
	"socialrouter/internal/jsonscan"
)

// Records returns the records of a run's JSON (its API form or its stored
// document) as they stand in it: each a sub-slice of doc, nothing decoded
// or copied. The run's "data" member is found by one pass over the top
// level (the records are skipped over, not read). ok is false when doc is
// not a JSON object with a "data" array. The stored document is the
// encoder's output (AppendRun), so doc is trusted to be valid JSON.
func Records(doc []byte) (recs [][]byte, ok bool) {
	s := jsonscan.Bytes(doc)
	i := jsonscan.SkipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return nil, false
	}
	for i++; ; {
		k, v, next, ok := jsonscan.NextMember(s, i)
		if !ok {
			return nil, false
		}
		if k == "data" {
			if len(v) == 0 || v[0] != '[' {
				return nil, false
			}
			start := next - len(v) // v's offset in doc
			recs = [][]byte{}
			for j := 1; ; {
				el, after, ok := jsonscan.NextElem(v, j)
				if !ok {
					return recs, true
				}
				at := start + after - len(el)
				recs = append(recs, doc[at:at+len(el):at+len(el)])
				j = after
			}
		}
		i = next
	}
}
