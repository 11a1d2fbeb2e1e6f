package cache

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestEncodeEntryAsMarshal: encodeEntry writes what json.Marshal writes
// for entries of compact records (what the normalizer makes), except that
// a record is kept verbatim where json.Marshal would escape <, > and & in
// it: the same JSON, and the bytes the live call answered with. Entries
// stored before it and after it read alike.
func TestEncodeEntryAsMarshal(t *testing.T) {
	at := time.Date(2026, 11, 28, 0, 40, 1, 123456789, time.UTC)
	for _, e := range []Entry{
		{Offer: "source_b/pro_net", At: at, Window: 10, Complete: true, Records: []json.RawMessage{
			json.RawMessage(`{"name":"A \"quoted\" \u00e9 name","tags":["x",{"y":[1,2.5e3,null]}],"n":-1}`),
			json.RawMessage(`{"url":"https://x/in/b?a=1&b=<2>","empty":{},"list":[]}`),
		}},
		{Offer: "source_a/actor_1", At: at.Truncate(time.Second)},
		{Offer: "o\\with\"escapes<&>\u2028", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
			Window: -3, Records: []json.RawMessage{json.RawMessage(`[1,2]`), json.RawMessage(`"s"`), nil}},
		{Offer: "", At: time.Time{}, Records: []json.RawMessage{}},
	} {
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		got := encodeEntry(&e)
		if !bytes.Equal(htmlEscaped(got), want) {
			t.Errorf("encodeEntry\n = %s\nwant %s", got, want)
		}
		var back Entry
		if !decodeEntry(got, &back) || len(back.Records) != len(e.Records) {
			t.Fatalf("decodeEntry(%s) = %+v", got, back)
		}
		for i, r := range e.Records {
			if r != nil && !bytes.Equal(back.Records[i], r) {
				t.Errorf("record %d read back %s, want it verbatim %s", i, back.Records[i], r)
			}
		}
	}
}

// htmlEscaped is b with <, > and & escaped as json.Marshal escapes them.
func htmlEscaped(b []byte) []byte {
	var buf bytes.Buffer
	json.HTMLEscape(&buf, b)
	return buf.Bytes()
}

func BenchmarkEncodeEntry(b *testing.B) {
	rec := json.RawMessage(`{"url":"https://www.linkedin.com/in/rbranson","name":"Rick Branson","about":"` + string(make([]byte, 0)) + `x","followers":1200,"experience":[{"title":"Engineer","company":"Example"}]}`)
	e := &Entry{Offer: "source_b/pro_net", At: time.Now().UTC(), Records: []json.RawMessage{rec}}
	for _, tc := range []struct {
		name string
		fn   func() []byte
	}{
		{"json.Marshal", func() []byte { v, _ := json.Marshal(e); return v }},
		{"encodeEntry", func() []byte { return encodeEntry(e) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				tc.fn()
			}
		})
	}
}
