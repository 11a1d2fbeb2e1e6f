package normalize

import (
	"bytes"

	"socialrouter/internal/jsonscan"
)

// ErrorMarkers are the top-level fields with which the sources mark an item
// that carries no data: a per-input error row (error, error_code, as both
// sources send for a dead page) or a partial one (warning, warning_code, as
// source_b sends). Such an item is never a billable record, whatever the
// offer's program makes of it.
var ErrorMarkers = []string{"error", "error_code", "warning", "warning_code"}

// errorKey and warningKey start every marker as a JSON key written
// plainly; escapeU is in every key that spells a marker with escapes
// (only \u can write a letter).
var errorKey, warningKey, escapeU = []byte(`"error`), []byte(`"warning`), []byte(`\u`)

// IsErrorItem reports whether item is an object with a non-null value in
// one of the ErrorMarkers at its top level. It takes any bytes: an item
// that is not valid JSON is not an error row (the program decides what it
// is).
func IsErrorItem(item []byte) (marked bool) {
	// Most items name no marker anywhere: a vectorized search rules them
	// out before any scanning. (The compiled plan does not come here: it
	// reads the markers while it indexes the root object.)
	if !bytes.Contains(item, errorKey) && !bytes.Contains(item, warningKey) && !bytes.Contains(item, escapeU) {
		return false
	}
	s := jsonscan.Bytes(item)
	i := jsonscan.SkipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	// The scanner trusts its input; a truncated item must not crash the
	// guard.
	defer func() {
		if recover() != nil {
			marked = false
		}
	}()
	for i++; ; {
		k, v, next, ok := jsonscan.NextMember(s, i)
		if !ok {
			return false
		}
		if v != "null" && isMarker(k) {
			return true
		}
		i = next
	}
}

func isMarker(k string) bool {
	for _, m := range ErrorMarkers {
		if k == m {
			return true
		}
	}
	return false
}
