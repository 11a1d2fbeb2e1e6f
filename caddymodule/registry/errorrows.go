package registry

import (
	"context"
	"encoding/json"

	"socialrouter/caddymodule/normalize"
)

// What an error row means (an offer's error_rows).
const (
	RowGone        = "gone"
	RowPrivate     = "private"
	RowRateLimited = "rate_limited"
)

// ErrorRow is one declared meaning of an offer's error rows: When, a jq
// predicate over the raw row, selects the rows Means describes.
type ErrorRow struct {
	When  *normalize.Program
	Means string
}

// RowMeaning is what o declares the error row item to mean: the Means of
// the first error_rows entry whose predicate is truthy on it, "" when none
// is (or item is no JSON). The sources' own error_code "dead_page" needs
// no declaration.
func (o *Offer) RowMeaning(item []byte) string {
	if len(o.ErrorRows) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(item, &v) != nil {
		return ""
	}
	for _, e := range o.ErrorRows {
		outs, err := e.When.Run(context.Background(), v, "", "")
		if err == nil && len(outs) > 0 && outs[0] != nil && outs[0] != false {
			return e.Means
		}
	}
	return ""
}

// GoneRow reports whether o declares the error row item to mean that its
// input names a page the gateway cannot read (gone or private): an answer
// with no record for that input, not a failure.
func (o *Offer) GoneRow(item []byte) bool {
	m := o.RowMeaning(item)
	return m == RowGone || m == RowPrivate
}
