package storetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

func init() {
	retentionSuites = []suite{
		{"retention_expires_records_keeps_facts", testRetention},
		{"retention_failed_and_empty_runs", testRetentionFailed},
	}
}

// retentionSuites are the run_retention cases (store.Expirer).
var retentionSuites []suite

func expirer(t *testing.T, s store.Store) store.Expirer { return implements[store.Expirer](t, s) }

// testRetention: runs older than the cutoff lose their records, in batches
// of at most the limit, and keep every billing fact; younger runs, usage
// rollups, balances and the run list are untouched; a second pass finds
// nothing.
func testRetention(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	e := expirer(t, s)
	mustAccount(t, s, "acme", cr(100))
	mustKey(t, s, "key_r", "acme")
	cutoff := base.Add(-30 * 24 * time.Hour)
	var old []*runs.Run
	for i := range 3 {
		r := newRun("acme", "key_r", 4)
		r.CreatedAt = cutoff.Add(-time.Duration(3-i) * time.Hour)
		r.CompletedAt = r.CreatedAt.Add(time.Second)
		mustSettle(t, s, settlement(r, price, r.CompletedAt))
		old = append(old, r)
	}
	young := newRun("acme", "key_r", 2)
	young.CreatedAt = cutoff.Add(time.Hour)
	mustSettle(t, s, settlement(young, price, young.CreatedAt))

	before := map[string]runs.Run{}
	for _, r := range append(old, young) {
		got, err := s.GetRun(ctx(t), "acme", r.ID)
		if err != nil {
			t.Fatal(err)
		}
		before[r.ID] = got
	}
	usage, err := s.Usage(ctx(t), "acme", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	balance := balanceOf(t, s, "acme")
	listed, err := s.ListRuns(ctx(t), "acme", store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}

	now := base
	res, err := e.ExpireRuns(ctx(t), cutoff, now, 2)
	if err != nil || res.Runs != 2 || res.Bytes <= 0 {
		t.Fatalf("first batch: %+v, %v; want 2 runs and bytes freed", res, err)
	}
	res, err = e.ExpireRuns(ctx(t), cutoff, now, 2)
	if err != nil || res.Runs != 1 {
		t.Fatalf("second batch: %+v, %v; want the 1 run left", res, err)
	}
	res, err = e.ExpireRuns(ctx(t), cutoff, now.Add(time.Hour), 10)
	if err != nil || res.Runs != 0 {
		t.Fatalf("third pass: %+v, %v; want nothing left to expire", res, err)
	}

	for _, r := range old {
		got, err := s.GetRun(ctx(t), "acme", r.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := before[r.ID]
		want.Data = []json.RawMessage{}
		want.RecordsExpired = true
		at := wantTime(now)
		want.ExpiredAt = &at
		sameRun(t, got, want)
		if got.CreditsUsed != 4*price || got.Pagination.Returned != 4 || got.Pagination.Total != 4 {
			t.Errorf("run %s: credits_used %d, pagination %+v; want the settled facts", r.ID, got.CreditsUsed, got.Pagination)
		}
		b, err := s.GetRunJSON(ctx(t), nil, "acme", r.ID)
		if err != nil {
			t.Fatal(err)
		}
		wb, _ := json.Marshal(got)
		if string(b) != string(wb) {
			t.Errorf("GetRunJSON of expired run\n got %s\nwant %s", b, wb)
		}
		if !strings.Contains(string(b), `"data":[],`) || !strings.Contains(string(b), `"records_expired":true`) {
			t.Errorf("expired run JSON %s lacks data [] or records_expired", b)
		}
	}
	got, err := s.GetRun(ctx(t), "acme", young.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, got, before[young.ID])
	if len(got.Data) != 2 || got.RecordsExpired {
		t.Errorf("young run: %d records, expired %v; want untouched", len(got.Data), got.RecordsExpired)
	}
	usage2, err := s.Usage(ctx(t), "acme", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(usage, usage2) {
		t.Errorf("usage changed by retention:\n before %+v\n after  %+v", usage, usage2)
	}
	if b := balanceOf(t, s, "acme"); b != balance {
		t.Errorf("balance %d after retention, want %d", b, balance)
	}
	listed2, err := s.ListRuns(ctx(t), "acme", store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(listed, listed2) {
		t.Errorf("run list changed by retention:\n before %+v\n after  %+v", listed, listed2)
	}
}

// testRetentionFailed: a failed run (no records, no charge) expires too,
// keeping its error and attempts; limit 0 does nothing.
func testRetentionFailed(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	e := expirer(t, s)
	mustAccount(t, s, "acme", cr(1))
	r := newRun("acme", "", 0)
	r.Status = runs.StatusFailed
	r.Error = &runs.RunError{Code: "provider_error", Type: "provider", Message: "upstream 503"}
	r.Data = nil
	mustSettle(t, s, settlement(r, 0, base))
	if res, err := e.ExpireRuns(ctx(t), base.Add(time.Hour), base, 0); err != nil || res.Runs != 0 {
		t.Fatalf("limit 0: %+v, %v", res, err)
	}
	if res, err := e.ExpireRuns(ctx(t), base.Add(time.Hour), base.Add(time.Hour), 5); err != nil || res.Runs != 1 {
		t.Fatalf("ExpireRuns: %+v, %v; want 1 run", res, err)
	}
	got, err := s.GetRun(ctx(t), "acme", r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.RecordsExpired || got.Error == nil || got.Error.Code != "provider_error" || got.Status != runs.StatusFailed || len(got.Attempts) != 1 {
		t.Errorf("expired failed run = %+v; want its error, status and attempts kept", got)
	}
	if n, err := e.StoredBytes(ctx(t)); err != nil || n <= 0 {
		t.Errorf("StoredBytes = %d, %v; want a positive size", n, err)
	}
}
