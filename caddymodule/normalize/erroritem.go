package normalize

import "github.com/tidwall/gjson"

// ErrorMarkers are the top-level fields with which the sources mark an item
// that carries no data: a per-input error row (error, error_code, as both
// sources send for a dead page) or a partial one (warning, warning_code, as
// source_b sends). Such an item is never a billable record, whatever the
// offer's program makes of it.
var ErrorMarkers = []string{"error", "error_code", "warning", "warning_code"}

// IsErrorItem reports whether item is an object with a non-null value in
// one of the ErrorMarkers at its top level. It reads the item once and
// tolerates any bytes (an invalid item is not an error item; the program
// decides what it is).
func IsErrorItem(item []byte) bool {
	r := gjson.ParseBytes(item)
	if !r.IsObject() {
		return false
	}
	marked := false
	r.ForEach(func(k, v gjson.Result) bool {
		if v.Type != gjson.Null && isMarker(k.Str) {
			marked = true
			return false
		}
		return true
	})
	return marked
}

func isMarker(k string) bool {
	for _, m := range ErrorMarkers {
		if k == m {
			return true
		}
	}
	return false
}
