package sources

import (
	"encoding/json"
	"fmt"
	"sync"

	"socialrouter/internal/jsonscan"
)

// splitItems splits a top-level JSON array into its raw elements without
// decoding them, and counts the per-input error or warning records. The
// items are slices of body, capacity-capped so that appending to one never
// writes over its neighbour: the body is read once and nothing is copied
// (the items together are the body, so pinning it costs nothing).
//
// checked says every item passed jsonscan's strict check, which the normalizer then
// need not check again: the common case, read in one pass
// (splitChecked). A body that does not pass (a duplicated key, invalid
// UTF-8, or invalid JSON) is read the lenient way: jsonscan's lax check
// (encoding/json's syntax) validates it and jsonscan walks it, and the
// normalizer checks each item on its own.
func splitItems(body []byte) (items []json.RawMessage, errorItems, deadItems int, checked bool, err error) {
	if sp, ok := splitChecked(body, nil); ok {
		return sp.items, sp.errorItems, sp.deadItems, true, nil
	}
	items, errorItems, deadItems, err = splitLenient(body)
	return items, errorItems, deadItems, false, err
}

// split is what splitChecked read of a body.
type split struct {
	items                 []json.RawMessage
	members               [][]jsonscan.Member // per item; see splitChecked
	errorItems, deadItems int
}

// splitChecked is splitItems for a body that is a JSON array of items
// jsonscan's strict check accepts, checking them as it splits; ok=false
// otherwise. With index not nil, it also notes where each object item's
// members lie, as the check finds them (jsonscan.MemberAt), into *index
// (grown as needed, for the caller to reuse): members[k] is item k's, nil
// for an item that is not an object or has a key written with an escape.
// The normalizer indexes an item from them instead of a pass of its own.
func splitChecked(body []byte, index *[]jsonscan.Member) (sp split, ok bool) {
	c := jsonscan.Get()
	defer jsonscan.Put(c)
	s := jsonscan.Bytes(body)
	i := jsonscan.SkipSpace(s, 0)
	if i >= len(s) || s[i] != '[' {
		return sp, false
	}
	sp.items = make([]json.RawMessage, 0, 16)
	if i = jsonscan.SkipSpace(s, i+1); i < len(s) && s[i] == ']' {
		return sp, jsonscan.SkipSpace(s, i+1) == len(s)
	}
	var flat []jsonscan.Member
	var spans [][2]int32 // item k's members are flat[spans[k][0]:spans[k][1]]; -1: none
	if index != nil {
		flat = (*index)[:0]
		spans = make([][2]int32, 0, 16)
	}
	isErr, isDead, indexed := false, false, false
	obj := "" // the item being checked, from its brace on
	member := func(k, v string) {
		if isErrorKey(k) && v != "null" {
			isErr = true
			isDead = isDead || isDeadCode(k, v)
		}
		if indexed {
			if m, ok := jsonscan.MemberAt(obj, k, v); ok {
				flat = append(flat, m)
			} else {
				indexed = false
			}
		}
	}
	for {
		isErr, isDead = false, false
		var end int
		first := int32(len(flat))
		indexed = false
		if i < len(s) && s[i] == '{' {
			indexed, obj = index != nil, s[i:]
			end = c.Object(s, i, member)
		} else {
			end = c.Value(s, i)
		}
		if end < 0 {
			return split{}, false
		}
		if index != nil {
			if indexed {
				spans = append(spans, [2]int32{first, int32(len(flat))})
			} else {
				flat = flat[:first]
				spans = append(spans, [2]int32{-1, -1})
			}
		}
		sp.items = append(sp.items, body[i:end:end])
		if isErr {
			sp.errorItems++
			if isDead {
				sp.deadItems++
			}
		}
		if i = jsonscan.SkipSpace(s, end); i >= len(s) {
			return split{}, false
		}
		switch s[i] {
		case ']':
			if jsonscan.SkipSpace(s, i+1) != len(s) {
				return split{}, false
			}
			if index != nil {
				*index = flat
				sp.members = make([][]jsonscan.Member, len(spans))
				for k, r := range spans {
					if r[0] >= 0 {
						sp.members[k] = flat[r[0]:r[1]:r[1]]
					}
				}
			}
			return sp, true
		case ',':
			i = jsonscan.SkipSpace(s, i+1)
		default:
			return split{}, false
		}
	}
}

// isErrorKey reports whether a top-level key, when not null, makes an
// item a per-input error or warning record.
func isErrorKey(k string) bool { return k == "error" || k == "error_code" || k == "warning_code" }

// isDeadCode reports an error member saying the input's page is gone:
// error_code or warning_code "dead_page" (v is the raw JSON value).
func isDeadCode(k, v string) bool {
	return (k == "error_code" || k == "warning_code") && v == `"dead_page"`
}

// splitLenient is splitItems for any body encoding/json accepts.
func splitLenient(body []byte) ([]json.RawMessage, int, int, error) {
	if !jsonscan.ValidSyntax(body) {
		return nil, 0, 0, fmt.Errorf("upstream body is not valid JSON (%d bytes): %s", len(body), snippet(body))
	}
	s := jsonscan.Bytes(body)
	i := jsonscan.SkipSpace(s, 0)
	if s[i] != '[' {
		return nil, 0, 0, fmt.Errorf("upstream body is not a JSON array: %s", snippet(body))
	}
	items := make([]json.RawMessage, 0, 16)
	errorItems, deadItems := 0, 0
	for i++; ; {
		i = jsonscan.SkipSpace(s, i)
		if s[i] == ',' {
			i = jsonscan.SkipSpace(s, i+1)
		}
		if s[i] == ']' {
			return items, errorItems, deadItems, nil
		}
		end, isErr, isDead := scanItem(s, i)
		items = append(items, body[i:end:end])
		if isErr {
			errorItems++
			if isDead {
				deadItems++
			}
		}
		i = end
	}
}

// DeadRow reports whether item (one split item, valid JSON) is an error row
// saying its input's page is gone: error_code or warning_code "dead_page".
func DeadRow(item []byte) bool {
	s := jsonscan.Bytes(item)
	i := jsonscan.SkipSpace(s, 0)
	if i >= len(s) {
		return false
	}
	_, _, isDead := scanItem(s, i)
	return isDead
}

// scanItem returns the index after the item starting at s[i], and whether
// it is a per-input error or warning record: an object whose top level
// has a non-null error, error_code or warning_code. The item is read once.
func scanItem(s string, i int) (end int, isErr, isDead bool) {
	if s[i] != '{' {
		return jsonscan.SkipValue(s, i), false, false
	}
	for i++; ; {
		k, v, next, ok := jsonscan.NextMember(s, i)
		if !ok {
			return next + 1, isErr, isDead // next is the closing brace
		}
		if isErrorKey(k) && v != "null" {
			isErr = true
			isDead = isDead || isDeadCode(k, v)
		}
		i = next
	}
}

// itemsResult is the Result of an answer whose body is the items, for
// both protocols: split (and checked) once, or malformed.
func itemsResult(ans *answer) (*Result, error) {
	index := memberBufs.Get().(*[]jsonscan.Member)
	if sp, ok := splitChecked(ans.body, index); ok {
		return &Result{Items: sp.items, Members: sp.members, ErrorItems: sp.errorItems, DeadItems: sp.deadItems,
			Checked: true, Handles: ans.handles, Status: ans.status, buf: ans.buf, index: index}, nil
	}
	memberBufs.Put(index)
	items, errItems, dead, err := splitLenient(ans.body)
	if err != nil {
		return nil, malformed(ans, err)
	}
	return &Result{Items: items, ErrorItems: errItems, DeadItems: dead, Handles: ans.handles, Status: ans.status, buf: ans.buf}, nil
}

// memberBufs holds the members' index of a checked body between calls
// (Result.Release gives it back).
var memberBufs = sync.Pool{New: func() any { return new([]jsonscan.Member) }}
