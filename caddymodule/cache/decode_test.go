package cache

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestDecodeEntry: an entry as json.Marshal stores it reads back as
// encoding/json reads it, records byte for byte; what is not an entry is
// refused.
func TestDecodeEntry(t *testing.T) {
	at := time.Date(2026, 11, 28, 0, 40, 1, 123456789, time.UTC)
	entries := []Entry{
		{Offer: "source_b/pro_net", At: at, Window: 10, Complete: true, Records: []json.RawMessage{
			json.RawMessage(`{"name":"A \"quoted\" \u00e9 name","tags":["x",{"y":[1,2.5e3,null]}],"n":-1}`),
			json.RawMessage(`{"url":"https://x/in/b","empty":{},"list":[]}`),
		}},
		{Offer: "source_a/actor_1", At: at},
		{Offer: "o\\with\"escapes", At: at, Records: []json.RawMessage{json.RawMessage(`[1,2]`), json.RawMessage(`"s"`)}},
	}
	for _, want := range entries {
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var std, got Entry
		if err := json.Unmarshal(b, &std); err != nil {
			t.Fatal(err)
		}
		if !decodeEntry(b, &got) {
			t.Fatalf("decodeEntry refused %s", b)
		}
		if !reflect.DeepEqual(got, std) {
			t.Errorf("decodeEntry(%s)\n = %+v\nwant %+v", b, got, std)
		}
		// The records are slices of b: appending to one leaves the next.
		if len(got.Records) > 1 {
			_ = append(got.Records[0], 'x')
			if string(got.Records[1]) != string(std.Records[1]) {
				t.Errorf("a record's append overwrote the next: %s", got.Records[1])
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"offer":"a","at":"yesterday","records":[]}`, `{"offer":"a","records":[{]}`, `{"window":"ten"}`} {
		var e Entry
		if decodeEntry([]byte(bad), &e) {
			t.Errorf("decodeEntry accepted %q", bad)
		}
	}
}
