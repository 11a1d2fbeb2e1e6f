package api

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"socialrouter/caddymodule/runs"
	"testing"
	"time"
)

func TestWriteRunMatchesEncodingJSON(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		run  runs.Run
	}{
		{"records", runs.Run{ID: "ext_1", Status: "completed", Platform: "pro_net", Service: "company.info",
			URL: `https://x.example/"data":null,`, ServedBy: "source_b/pro_net", CreditsUsed: 3450,
			Data:       []json.RawMessage{json.RawMessage(`{"name":"A & B <c>"}`), json.RawMessage(`{"n":1}`)},
			Pagination: runs.Pagination{Total: 2, Returned: 2}, CreatedAt: now, CompletedAt: now}},
		{"empty", runs.Run{ID: "ext_2", Status: "failed", Data: []json.RawMessage{}, CreatedAt: now, CompletedAt: now,
			Error: &runs.RunError{Code: "provider_error", Type: "provider", Message: "m"}}},
		{"search", runs.Run{ID: "ext_3", Kind: "search", Status: "completed", Queries: []string{"q"},
			Data: []json.RawMessage{json.RawMessage(`{"a":[1,2]}`)}, CreatedAt: now, CompletedAt: now,
			Pagination: runs.Pagination{NextCursor: json.RawMessage(`null`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeRun(rec, &tt.run)
			want, _ := json.Marshal(&tt.run)
			var got, exp any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("invalid JSON %s: %v", rec.Body.Bytes(), err)
			}
			_ = json.Unmarshal(want, &exp)
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("got %s\nwant %s", rec.Body.Bytes(), want)
			}
		})
	}
}

func BenchmarkWriteRun(b *testing.B) {
	rec := json.RawMessage(`{"name":"Richard Branson","profile_url":"https://www.linkedin.com/in/rbranson","source":"pro_net","extracted_at":"2026-11-21T12:00:00.000Z","about":"` + string(make([]byte, 0)) + `Founder of Virgin Group","follower_count":19000000}`)
	run := runs.Run{ID: "ext_1", Status: "completed", CreatedAt: time.Now(), CompletedAt: time.Now()}
	for range 10 {
		run.Data = append(run.Data, rec)
	}
	b.Run("writeRun", func(b *testing.B) {
		for b.Loop() {
			writeRun(httptest.NewRecorder(), &run)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			writeJSON(httptest.NewRecorder(), 200, &run)
		}
	})
}
