package settle

import (
	"bytes"
	"encoding/json"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// TestCutScope checks that the documents Settle stores are served by
// cutting their scope members off (not by the decoding fallback), giving
// exactly the bytes the handler answers a run with (runs.AppendJSON of
// the decoded run), and that any other shape
// is refused untouched.
func TestCutScope(t *testing.T) {
	cases := []struct {
		name       string
		account    string
		key        string
		data       []json.RawMessage
		nextCursor json.RawMessage
	}{
		{"plain", "acme", "key_1", []json.RawMessage{json.RawMessage(`{"a":1}`)}, nil},
		{"no key", "acme", "", nil, nil},
		{"escapes in the ids", `a"c\me",`, `k\",\"account_id\":"`, nil, nil},
		{"scope-like records", "acme", "key_1", []json.RawMessage{json.RawMessage(`{"x":"\",\"key_id\":\"k\"}","account_id":"y"}`)}, json.RawMessage(`null`)},
		{"HTML and separators", "acme<&>", "key\u2028", []json.RawMessage{json.RawMessage(`{"h":"<a>&","s":"` + "\u2029" + `"}`)}, json.RawMessage(`"c"`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := &runs.Run{ID: "ext_1", Status: "completed", URL: "https://e.com/?a=<b>", AccountID: tc.account, KeyID: tc.key,
				Data: tc.data, Pagination: runs.Pagination{Total: len(tc.data), NextCursor: tc.nextCursor}}
			p, err := Prepare(store.Settlement{Run: run, Price: 1})
			if err != nil {
				t.Fatal(err)
			}
			for records := len(tc.data); records >= 0; records-- {
				doc, err := p.Doc(records, credits.Micros(records))
				if err != nil {
					t.Fatal(err)
				}
				doc = bytes.Clone(doc)
				decoded, err := DecodeRun(doc)
				if err != nil {
					t.Fatal(err)
				}
				head := decoded
				head.Data = nil
				want, err := runs.AppendJSON(nil, &head, decoded.Data)
				if err != nil {
					t.Fatal(err)
				}
				got, ok := cutScope(doc)
				if !ok {
					t.Fatalf("%d records: stored document %s not cut", records, doc)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%d records:\n got %s\nwant %s", records, got, want)
				}
			}
		})
	}

	refused := []string{
		``, `{}`, `[]`, `{"id":"x"}`, `{"account_id":"a"}`, `{"id":"x","account_id":1}`,
		`{"id":"x","account_id":"a"`, `{"id":"x","account":"a"}`, `{"id":"x","key_id":"k"}`,
		`{"id":"x","account_id":"a\"}`, `{"id":"x","data":{"account_id":"a"}}`, `"account_id":"a"}`,
	}
	for _, doc := range refused {
		b := []byte(doc)
		if got, ok := cutScope(b); ok {
			t.Errorf("cutScope(%s) = %s, want refused", doc, got)
		}
		if string(b) != doc {
			t.Errorf("cutScope changed a refused document: %s → %s", doc, b)
		}
	}
}

// TestRunAPIJSONFallback checks that a document cutScope refuses is still
// served, decoded and encoded again.
func TestRunAPIJSONFallback(t *testing.T) {
	got, err := RunAPIJSON([]byte(`{"account_id":"acme","id":"ext_1","status":"completed","url":"u","credits_used":0,"data":[{"b":1, "a":2}],"pagination":{"total":1,"returned":1},"created_at":"2025-03-12T10:00:00Z","completed_at":"2025-03-12T10:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"ext_1","status":"completed","url":"u","credits_used":0,"data":[{"b":1,"a":2}],"pagination":{"total":1,"returned":1},"created_at":"2025-03-12T10:00:00Z","completed_at":"2025-03-12T10:00:00Z","livemode":true}` // stored before test mode: a live run
	if string(got) != want {
		t.Errorf("RunAPIJSON =\n %s\nwant\n %s", got, want)
	}
}
