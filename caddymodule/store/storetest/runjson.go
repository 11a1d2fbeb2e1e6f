package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// sameRunJSON checks GetRunJSON against GetRun: the same JSON as
// json.Marshal of GetRun's run (compared decoded, so any valid encoding
// passes), with the records byte for byte and in order (their key order is
// the producer's), and never the account or key id.
func sameRunJSON(t *testing.T, s store.Store, account, id string) {
	t.Helper()
	run, err := s.GetRun(ctx(t), account, id)
	if err != nil {
		t.Fatalf("GetRun(%q, %q): %v", account, id, err)
	}
	want, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	// Appended to a buffer that already holds bytes, with room to spare:
	// they must survive, and the run follow them.
	prefix := append(make([]byte, 0, 1<<16), "prefix:"...)
	got, err := s.GetRunJSON(ctx(t), prefix, account, id)
	if err != nil {
		t.Fatalf("GetRunJSON(%q, %q): %v", account, id, err)
	}
	if !strings.HasPrefix(string(got), "prefix:") {
		t.Fatalf("GetRunJSON(%q, %q) did not append to dst: %.40s", account, id, got)
	}
	got = got[len("prefix:"):]
	if !json.Valid(got) {
		t.Fatalf("GetRunJSON(%q, %q) is not valid JSON: %s", account, id, got)
	}
	var gv, wv any
	if err := json.Unmarshal(got, &gv); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &wv); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gv, wv) {
		t.Errorf("GetRunJSON(%q, %q) differs from json.Marshal(GetRun):\n got %s\nwant %s", account, id, got, want)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(got, &members); err != nil {
		t.Fatal(err)
	}
	for _, scope := range []string{"account_id", "key_id"} {
		if _, ok := members[scope]; ok {
			t.Errorf("GetRunJSON(%q, %q) renders %s: %s", account, id, scope, got)
		}
	}
	var records struct{ Data []json.RawMessage }
	if err := json.Unmarshal(got, &records); err != nil {
		t.Fatal(err)
	}
	if records.Data == nil || len(records.Data) != len(run.Data) {
		t.Fatalf("GetRunJSON(%q, %q) has %d records (nil %v), GetRun %d", account, id, len(records.Data), records.Data == nil, len(run.Data))
	}
	for i := range run.Data {
		var g, w bytes.Buffer
		if json.Compact(&g, records.Data[i]) != nil || json.Compact(&w, run.Data[i]) != nil || !bytes.Equal(g.Bytes(), w.Bytes()) {
			t.Errorf("record %d: GetRunJSON %s, GetRun %s", i, records.Data[i], run.Data[i])
		}
	}
}

// sameAnswer checks the answer a settle handed back (store.Settlement.Answer)
// against GetRunJSON: the same bytes, so a call answers what a later GET
// of its run answers.
func sameAnswer(t *testing.T, s store.Store, account, id string, answer []byte) {
	t.Helper()
	stored, err := s.GetRunJSON(ctx(t), nil, account, id)
	if err != nil {
		t.Fatalf("GetRunJSON(%q, %q): %v", account, id, err)
	}
	if !bytes.Equal(answer, stored) {
		t.Errorf("the settle's answer differs from GetRunJSON(%q, %q):\n got %s\nwant %s", account, id, answer, stored)
	}
}

// testRunJSON settles runs whose JSON exercises encoding edge cases (HTML
// characters and line separators that json.Marshal escapes, records with
// insignificant whitespace, escapes in the scope ids, a search run with a
// null or string cursor, no key) and checks GetRunJSON renders each as
// GetRun does; another account's run and unknown ids are ErrNotFound.
func testRunJSON(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	cases := []struct {
		name    string
		account string
		key     string
		mod     func(r *runs.Run)
	}{
		{"completed run", "acme", "key_1", func(*runs.Run) {}},
		{"no key", "acme", "", func(*runs.Run) {}},
		{"quotes and backslashes in the scope ids", `ac"me\`, `k\"ey,"key_id":"x"}`, func(*runs.Run) {}},
		{"scope-like text in the records", "acme", "key_1", func(r *runs.Run) {
			r.Data = append(r.Data, json.RawMessage(`{"note":"\",\"account_id\":\"rival\"}","key_id":"x"}`))
		}},
		{"characters json.Marshal escapes", "acme", "key_1", func(r *runs.Run) {
			r.URL = "https://example.com/a?b=<c>&d=\u2028"
			r.Data = append(r.Data, json.RawMessage(`{"html":"<b>&amp;</b>","sep":"a`+"\u2028"+`b","uni":"é😀"}`))
		}},
		{"records with whitespace", "acme", "key_1", func(r *runs.Run) {
			r.Data = append(r.Data, json.RawMessage("{ \"b\" : 1,\n\t\"a\" : [ 1 , 2 ] }"))
		}},
		{"failed run", "acme", "key_1", func(r *runs.Run) {
			r.Status, r.Data = "failed", nil
			r.Error = &runs.RunError{Code: "provider_error", Type: "provider", Message: "every offer failed"}
		}},
		{"search run with a cursor", "acme", "key_1", func(r *runs.Run) {
			r.Kind, r.Source, r.Type, r.Queries = "search", "pro_net", "people", []string{"ceo", "founder"}
			r.Pagination.NextCursor = json.RawMessage(`"c_2"`)
		}},
		{"search run at the last page", "acme", "key_1", func(r *runs.Run) {
			r.Kind = "search"
			r.Pagination.NextCursor = json.RawMessage(`null`)
		}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if !seen[tc.account] {
			mustAccount(t, s, tc.account, cr(100))
			seen[tc.account] = true
		}
	}
	mustKey(t, s, "key_1", "acme")
	var first *runs.Run
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := newRun(tc.account, tc.key, 3)
			tc.mod(run)
			p := price
			if run.Status == "failed" {
				p = 0
			}
			st := settlement(run, p, base)
			var answer []byte
			st.Answer = &answer
			mustSettle(t, s, st)
			sameRunJSON(t, s, tc.account, run.ID)
			sameAnswer(t, s, tc.account, run.ID, answer)
			if first == nil {
				first = run
			}
		})
	}
	if first == nil {
		t.Fatal("no run settled")
	}
	mustAccount(t, s, "rival", cr(1))
	for _, tc := range []struct{ name, account, id string }{
		{"another account's run", "rival", first.ID},
		{"unknown account", "nobody", first.ID},
		{"unknown run", "acme", "ext_missing"},
		{"empty id", "acme", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if b, err := s.GetRunJSON(ctx(t), nil, tc.account, tc.id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetRunJSON(%q, %q) = %s, %v; want ErrNotFound", tc.account, tc.id, b, err)
			}
		})
	}
}
