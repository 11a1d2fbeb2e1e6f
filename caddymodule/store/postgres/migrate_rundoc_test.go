package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
)

// TestRunDocMigration opens a database as release 5 left it (run documents
// in a JSON column), migrates it, and checks that the old run reads back
// byte for byte and lists with its fields, and that a run settled after
// the migration is stored compressed and lists the same way.
func TestRunDocMigration(t *testing.T) {
	ctx := t.Context()
	url := testURL(t)
	schema := testSchema(t, url)
	old, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithMigrationsUpTo(5))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	if _, err := old.CreateAccount(ctx, "acme", 1_000_000, now); err != nil {
		t.Fatal(err)
	}
	old.Close()
	// The document as release 5 wrote it: the API form, then the scope.
	api := `{"id":"ext_old","status":"completed","platform":"pro_net","service":"profile.info","url":"u",` +
		`"served_by":"source_b/pro_net","credits_used":1725,"data":[{"b":1, "a":2}],"pagination":{"total":3,"returned":1},` +
		`"created_at":"2026-11-01T10:00:00Z","completed_at":"2026-11-01T10:00:01Z"}`
	stored := api[:len(api)-1] + `,"account_id":"acme"}`
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "runs"}.Sanitize()+
		` (id, account_id, key_id, status, credits_used, created_at, doc) VALUES ('ext_old', 'acme', NULL, 'completed', 1725, $1, $2::json)`,
		now.Add(-time.Hour), stored)
	if err != nil {
		t.Fatal(err)
	}

	s, err := postgres.Open(ctx, url, postgres.WithSchema(schema))
	if err != nil {
		t.Fatalf("migrating: %v", err)
	}
	defer s.Close()
	got, err := s.GetRunJSON(ctx, []byte("kept:"), "acme", "ext_old")
	if err != nil || string(got) != "kept:"+api {
		t.Fatalf("GetRunJSON of the migrated run = %s, %v; want kept:%s", got, err, api)
	}
	run, err := s.GetRun(ctx, "acme", "ext_old")
	if err != nil || run.ServedBy != "source_b/pro_net" || len(run.Data) != 1 || string(run.Data[0]) != `{"b":1, "a":2}` {
		t.Fatalf("GetRun of the migrated run = %+v, %v", run, err)
	}

	fresh := &runs.Run{
		ID: "ext_new", Status: "completed", Platform: "maps", Service: "place.search", Kind: runs.KindSearch,
		ServedBy: "source_a/maps", Provider: "source_a", Data: []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":2}`)},
		Pagination: runs.Pagination{Total: 2}, CreatedAt: now, CompletedAt: now, AccountID: "acme",
	}
	if _, err := s.Settle(ctx, store.Settlement{Run: fresh, Price: 1000, Offer: "source_a/maps", Platform: "maps", Now: now}); err != nil {
		t.Fatal(err)
	}
	var first byte
	err = conn.QueryRow(ctx, `SELECT get_byte(doc, 0) FROM `+pgx.Identifier{schema, "runs"}.Sanitize()+` WHERE id = 'ext_new'`).Scan(&first)
	if err != nil || first != 0x01 {
		t.Errorf("a run settled now is stored with first byte 0x%02x, %v; want rundoc's S2 marker", first, err)
	}
	newJSON, err := s.GetRunJSON(ctx, nil, "acme", "ext_new")
	if err != nil || !json.Valid(newJSON) {
		t.Fatalf("GetRunJSON of the new run = %s, %v", newJSON, err)
	}

	for _, tc := range []struct {
		filter store.RunFilter
		want   []store.RunSummary
	}{
		{store.RunFilter{}, []store.RunSummary{
			{ID: "ext_new", Kind: runs.KindSearch, Status: "completed", Platform: "maps", Service: "place.search", ServedBy: "source_a/maps", CreditsUsed: 2 * 1000, Records: 2},
			{ID: "ext_old", Status: "completed", Platform: "pro_net", Service: "profile.info", ServedBy: "source_b/pro_net", CreditsUsed: 1725, Records: 1},
		}},
		{store.RunFilter{Service: "profile.info"}, []store.RunSummary{
			{ID: "ext_old", Status: "completed", Platform: "pro_net", Service: "profile.info", ServedBy: "source_b/pro_net", CreditsUsed: 1725, Records: 1},
		}},
	} {
		list, err := s.ListRuns(ctx, "acme", tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		for i := range list {
			list[i].CreatedAt = time.Time{}
		}
		if len(list) != len(tc.want) {
			t.Fatalf("ListRuns(%+v) = %+v; want %+v", tc.filter, list, tc.want)
		}
		for i := range list {
			if list[i] != tc.want[i] {
				t.Errorf("ListRuns(%+v)[%d] = %+v; want %+v", tc.filter, i, list[i], tc.want[i])
			}
		}
	}
}
