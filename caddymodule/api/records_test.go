package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/runs"
)

// recordsPage is the JSON answer of GET /v1/extractions/{id}/records as
// encoding/json wrote it before the page was cut from the stored bytes:
// the shape the tests decode, and the reference appendRecordsPage must
// match byte for byte.
type recordsPage struct {
	RunID      string            `json:"run_id"`
	Data       []json.RawMessage `json:"data"`
	Total      int               `json:"total"`
	NextCursor *string           `json:"next_cursor"`
}

// TestAppendRecordsPage: the page written by hand is the bytes
// encoding/json (without HTML escaping, as httpjson answers) gives.
func TestAppendRecordsPage(t *testing.T) {
	cursor := "ZXh0XzE6Mw"
	cases := []struct {
		name   string
		id     string
		page   []string
		total  int
		cursor string
	}{
		{"empty", "ext_1", nil, 0, ""},
		{"last page", "ext_1", []string{`{"a":1}`, `{"b":"<&>\u00e9"}`}, 5, ""},
		{"with a next page", "ext_1", []string{`{"a":[1,2]}`}, 9, cursor},
		{"an id to escape", `ext_"<x>`, []string{`{}`}, 1, ""},
	}
	for _, tc := range cases {
		ref := recordsPage{RunID: tc.id, Data: []json.RawMessage{}, Total: tc.total}
		var page [][]byte
		for _, r := range tc.page {
			ref.Data = append(ref.Data, json.RawMessage(r))
			page = append(page, []byte(r))
		}
		if tc.cursor != "" {
			ref.NextCursor = &tc.cursor
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ref); err != nil {
			t.Fatal(err)
		}
		got := appendRecordsPage(nil, tc.id, page, tc.total, tc.cursor)
		if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, w)
		}
	}
}

// BenchmarkRecordsPage is a page of a stored 10-record run (fixture-sized
// records): cut from the stored bytes (bytes), against the run decoded
// and its page encoded by encoding/json, as the route did before (decode).
func BenchmarkRecordsPage(b *testing.B) {
	rec := []byte(`{"source":"pro_net","name":"` + strings.Repeat("n", 40) + `","about":"` + strings.Repeat("about text ", 200) +
		`","experience":[` + strings.Repeat(`{"title":"Engineer","company":"Acme","start_date":"2020"},`, 15) + `{}]}`)
	var data []json.RawMessage
	for range 10 {
		data = append(data, rec)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	run := &runs.Run{ID: "ext_1", Status: runs.StatusCompleted, URL: "https://x", CreatedAt: at, CompletedAt: at}
	doc, _ := runs.AppendRun(nil, run, data, false, "", "")
	b.Run("bytes", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		var out []byte
		for b.Loop() {
			recs, _ := runs.Records(doc)
			out = appendRecordsPage(out[:0], "ext_1", recs, len(recs), "")
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			var r runs.Run
			if err := json.Unmarshal(doc, &r); err != nil {
				b.Fatal(err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(recordsPage{RunID: "ext_1", Data: r.Data, Total: len(r.Data)})
		}
	})
}
