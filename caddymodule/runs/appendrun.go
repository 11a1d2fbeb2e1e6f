package runs

import (
	"encoding/json"
	"strconv"

	"socialrouter/internal/bufpool"
	"socialrouter/internal/jsonstr"
)

// DocBufs holds the buffers run documents are rendered into and answered
// from: the stored document a settle renders, which becomes the call's
// answer (store.Settlement.Answer), and the stored runs GET
// /v1/extractions/{id} reads. One pool for both, since a settle's buffer
// goes back from the API once the answer is written. It holds only free
// buffers, no account or config state.
var DocBufs bufpool.Pool

// AppendRun appends run as JSON, with records as its data, to dst: the
// bytes AppendJSON writes for it (encoding/json, HTML left unescaped), and
// with scoped the account_id and key_id members the stores keep after the
// run's own. Every run is encoded twice per call (the stored document and
// the answer), and encoding/json's reflection over the header was 5 % of
// the gateway's CPU for a one-record call.
//
// ok is false, and dst untouched, for what it leaves to encoding/json: a
// pagination cursor (search runs; encoding/json compacts it) or a time
// encoding/json refuses.
//
// Adding a member to Run: one append here at the member's place in the
// struct (appendOpt for an omitempty string; `,"name":` then the value
// otherwise, behind an `if` for omitempty). TestAppendRunCoversEveryField
// fails, naming the member, until its bytes are encoding/json's.
func AppendRun(dst []byte, run *Run, records []json.RawMessage, scoped bool, accountID, keyID string) (out []byte, ok bool) {
	if len(run.Pagination.NextCursor) > 0 {
		return dst, false
	}
	created, err := run.CreatedAt.MarshalJSON()
	if err != nil {
		return dst, false
	}
	completed, err := run.CompletedAt.MarshalJSON()
	if err != nil {
		return dst, false
	}
	b := dst
	b = append(b, `{"id":`...)
	b = appendString(b, run.ID)
	b = appendOpt(b, `,"kind":`, run.Kind)
	b = append(b, `,"status":`...)
	b = appendString(b, string(run.Status))
	b = appendOpt(b, `,"platform":`, run.Platform)
	b = appendOpt(b, `,"service":`, run.Service)
	b = appendOpt(b, `,"source":`, run.Source)
	b = appendOpt(b, `,"type":`, run.Type)
	b = append(b, `,"url":`...)
	b = appendString(b, run.URL)
	b = appendStrings(b, `,"queries":[`, run.Queries)
	b = appendOpt(b, `,"served_by":`, run.ServedBy)
	b = appendOpt(b, `,"provider":`, run.Provider)
	b = append(b, `,"credits_used":`...)
	b = append(b, run.CreditsUsed.String()...)
	b = append(b, `,"data":[`...)
	for i, d := range records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, d...)
	}
	b = append(b, `],"pagination":{"total":`...)
	b = strconv.AppendInt(b, int64(run.Pagination.Total), 10)
	b = append(b, `,"returned":`...)
	b = strconv.AppendInt(b, int64(run.Pagination.Returned), 10)
	b = append(b, `},"created_at":`...)
	b = append(b, created...)
	b = append(b, `,"completed_at":`...)
	b = append(b, completed...)
	if e := run.Error; e != nil {
		b = append(b, `,"error":{"code":`...)
		b = appendString(b, e.Code)
		b = append(b, `,"type":`...)
		b = appendString(b, e.Type)
		b = append(b, `,"message":`...)
		b = appendString(b, e.Message)
		b = append(b, '}')
	}
	if len(run.Attempts) > 0 {
		b = append(b, `,"attempts":[`...)
		for i := range run.Attempts {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendAttempt(b, &run.Attempts[i])
		}
		b = append(b, ']')
	}
	b = appendOpt(b, `,"capped_by":`, run.CappedBy)
	if run.RecordsExpired {
		b = append(b, `,"records_expired":true`...)
	}
	if run.ExpiredAt != nil {
		at, err := run.ExpiredAt.MarshalJSON()
		if err != nil {
			return dst, false
		}
		b = append(append(b, `,"expired_at":`...), at...)
	}
	b = append(b, `,"livemode":`...)
	b = strconv.AppendBool(b, run.Livemode)
	if run.CachedRecords != 0 {
		b = append(b, `,"cached_records":`...)
		b = strconv.AppendInt(b, int64(run.CachedRecords), 10)
	}
	if scoped {
		b = append(b, `,"account_id":`...)
		b = appendString(b, accountID)
		b = appendOpt(b, `,"key_id":`, keyID)
	}
	return append(b, '}'), true
}

func appendAttempt(b []byte, a *Attempt) []byte {
	b = append(b, `{"offer":`...)
	b = appendString(b, a.Offer)
	b = append(b, `,"outcome":`...)
	b = appendString(b, a.Outcome)
	if a.Status != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(a.Status), 10)
	}
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, a.DurationMS, 10)
	b = appendStrings(b, `,"handles":[`, a.Handles)
	b = appendOpt(b, `,"message":`, a.Message)
	if a.Records != 0 {
		b = append(b, `,"records":`...)
		b = strconv.AppendInt(b, int64(a.Records), 10)
	}
	return append(b, '}')
}

// appendOpt appends an omitempty string member: member (its comma and
// key) and s, unless s is empty.
func appendOpt(b []byte, member, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, member...), s)
}

// appendStrings appends an omitempty array of strings: member (its comma,
// key and opening bracket) and list, unless list is empty.
func appendStrings(b []byte, member string, list []string) []byte {
	if len(list) == 0 {
		return b
	}
	b = append(b, member...)
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendString appends s as encoding/json writes a string with HTML
// escaping off, as the API answers.
func appendString(b []byte, s string) []byte { return jsonstr.Append(b, s, false) }
