package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestSyncAnswerIsStoredRun: a synchronous call answers the document its
// settle stored (store.Settlement.Answer), byte for byte what GET
// /v1/extractions/{id} then answers, and the bytes encoding the settled run
// gives (writeRun, the answer before).
func TestSyncAnswerIsStoredRun(t *testing.T) {
	a := heldAPI(t)
	for _, tc := range []struct{ path, body string }{
		{"/v1/extract/pro_net/profile.info", `{"url":"https://www.linkedin.com/in/rbranson","provider":"source_a/actor_1"}`},
		{"/v1/extract/pro_net/profile.posts", `{"url":"https://www.linkedin.com/in/rbranson","limit":10}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := httptest.NewRequestWithContext(context.Background(), "POST", tc.path, strings.NewReader(tc.body))
			r.Header.Set("Authorization", "Bearer "+a.secret)
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, r)
			if rec.Code != 200 {
				t.Fatalf("POST %s: %d %s", tc.path, rec.Code, rec.Body)
			}
			answer := rec.Body.Bytes()
			var run struct {
				ID   string            `json:"id"`
				Data []json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(answer, &run); err != nil || run.ID == "" || len(run.Data) == 0 {
				t.Fatalf("answer %v: %.300s", err, answer)
			}
			res, _ := a.do(t, "GET", "/v1/extractions/"+run.ID, "", true)
			var got bytes.Buffer
			got.ReadFrom(res.Body)
			if res.StatusCode != 200 || !bytes.Equal(got.Bytes(), answer) {
				t.Errorf("GET /v1/extractions/%s: %d\n got %.300s\nwant %.300s", run.ID, res.StatusCode, got.Bytes(), answer)
			}
			if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(len(answer)) {
				t.Errorf("Content-Length %s for %d bytes", got, len(answer))
			}
			stored, err := a.store.GetRun(t.Context(), a.key.AccountID, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			enc := httptest.NewRecorder()
			writeRun(enc, &stored)
			if !bytes.Equal(enc.Body.Bytes(), answer) {
				t.Errorf("the answer differs from the settled run encoded:\n got %.300s\nwant %.300s", answer, enc.Body.Bytes())
			}
		})
	}
}
