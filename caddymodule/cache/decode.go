package cache

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"socialrouter/internal/jsonscan"
)

// decodeEntry reads an entry as json.Marshal stored it, in place: its
// records are slices of b (which the caller owns), not copies checked and
// copied again record by record as encoding/json does. A hit reads one
// entry; this was most of its lookup's CPU (bench/README.md, section 13).
// False when b is not an entry.
func decodeEntry(b []byte, e *Entry) bool {
	if !jsonscan.ValidSyntax(b) {
		return false
	}
	s := jsonscan.Bytes(b)
	start := jsonscan.SkipSpace(s, 0)
	if start >= len(s) || s[start] != '{' {
		return false
	}
	var err error
	for i := start + 1; ; {
		k, v, next, ok := jsonscan.NextMember(s, i)
		if !ok {
			break
		}
		switch k {
		case "offer":
			e.Offer = strings.Clone(jsonscan.Text(v))
		case "at":
			if e.At, err = time.Parse(time.RFC3339Nano, jsonscan.Text(v)); err != nil {
				return false
			}
		case "window":
			if e.Window, err = strconv.Atoi(v); err != nil {
				return false
			}
		case "complete":
			e.Complete = v == "true"
		case "records":
			if v[0] != '[' {
				break // null: no records
			}
			at := next - len(v) // where v begins in s
			e.Records = make([]json.RawMessage, 0, 4)
			for j := 1; ; {
				rec, end, ok := jsonscan.NextElem(v, j)
				if !ok {
					break
				}
				lo, hi := at+end-len(rec), at+end
				e.Records = append(e.Records, json.RawMessage(b[lo:hi:hi]))
				j = end
			}
		}
		i = next
	}
	return true
}
