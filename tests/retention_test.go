package tests

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestRetentionE2E: with run_retention 2s, a run's records are deleted in
// the background while GET /v1/extractions/{id} keeps answering the run,
// with data [], records_expired and expired_at and the same charge and
// counts; usage and the balance do not change. On badger and PostgreSQL.
func TestRetentionE2E(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"badger": func(t *testing.T) string { return "" },
		"postgres": func(t *testing.T) string {
			pgURL, _ := mnEnv(t)
			url, _ := mnSchema(t, pgURL)
			return "postgres " + url
		},
	}
	for _, name := range []string{"badger", "postgres"} {
		t.Run(name, func(t *testing.T) {
			storage := stores[name](t)
			s := startSim(t)
			c := defaultConfig(t, s)
			if storage != "" {
				c.Storage = storage
			}
			c.AppExtra = "run_retention 2s"
			g := startGateway(t, c)
			key := g.account("acme", 10)
			r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
			if r.Status != 200 {
				t.Fatalf("extract: %d %s", r.Status, r.Body)
			}
			id, _ := r.JSON["id"].(string)
			data, _ := r.JSON["data"].([]any)
			if len(data) == 0 {
				t.Fatalf("extract served no record: %s", r.Body)
			}
			usage := g.do("GET", "/v1/account/usage?days=1", key, nil)
			balance := g.balance(key)

			deadline := time.Now().Add(20 * time.Second)
			var got *response
			for {
				got = g.do("GET", "/v1/extractions/"+id, key, nil)
				if got.Status != 200 {
					t.Fatalf("get run: %d %s", got.Status, got.Body)
				}
				if got.JSON["records_expired"] == true {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("run %s still holds its records 20 s after a retention of 2 s: %s", id, got.Body)
				}
				time.Sleep(200 * time.Millisecond)
			}
			if !bytes.Contains(got.Body, []byte(`"data":[]`)) || got.JSON["expired_at"] == nil {
				t.Errorf("expired run lacks data [] or expired_at: %s", got.Body)
			}
			for _, f := range []string{"id", "status", "service", "served_by", "credits_used", "pagination", "created_at", "completed_at", "attempts"} {
				if a, b := jsonOf(r.JSON[f]), jsonOf(got.JSON[f]); a != b {
					t.Errorf("%s changed by retention: %s → %s", f, a, b)
				}
			}
			if u := g.do("GET", "/v1/account/usage?days=1", key, nil); !bytes.Equal(u.Body, usage.Body) {
				t.Errorf("usage changed by retention:\n%s\n%s", usage.Body, u.Body)
			}
			if b := g.balance(key); b != balance {
				t.Errorf("balance %v after retention, want %v", b, balance)
			}
			kind, _, _ := strings.Cut(c.Storage, " ")
			if v := g.scrape(t).value("sdr_retention_runs_expired_total", "store="+kind); v < 1 {
				t.Errorf("sdr_retention_runs_expired_total{store=%q} = %v, want at least 1", kind, v)
			}
		})
	}
}

// jsonOf is the JSON of a decoded value, for comparing members.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
