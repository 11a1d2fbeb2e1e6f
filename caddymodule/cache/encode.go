package cache

import (
	"strconv"
	"time"

	"socialrouter/internal/jsonstr"
)

// encodeEntry writes e as json.Marshal would, byte for byte, without
// reflection and without json.Marshal's pass over each record (a
// json.RawMessage is checked and compacted again): the records are the
// normalizer's output, compact and valid already. A live call encodes its
// entry before its settle; json.Marshal was 6 % of an N = 1 call's CPU
// (docs/perf-log.md, round 19).
func encodeEntry(e *Entry) []byte {
	n := 64 + len(e.Offer)
	for _, r := range e.Records {
		n += len(r) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"offer":`...)
	b = jsonstr.Append(b, e.Offer, true)
	b = append(b, `,"at":"`...)
	b = e.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if e.Window != 0 {
		b = append(b, `,"window":`...)
		b = strconv.AppendInt(b, int64(e.Window), 10)
	}
	if e.Complete {
		b = append(b, `,"complete":true`...)
	}
	b = append(b, `,"records":`...)
	if e.Records == nil {
		return append(b, "null}"...)
	}
	b = append(b, '[')
	for i, r := range e.Records {
		if i > 0 {
			b = append(b, ',')
		}
		if r == nil {
			r = []byte("null")
		}
		b = append(b, r...)
	}
	return append(b, "]}"...)
}
