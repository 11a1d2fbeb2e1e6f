package transfer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"socialrouter/internal/testenv"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"socialrouter/caddymodule/api"
	pgstore "socialrouter/caddymodule/store/postgres"
)

// runSDR runs `caddy sdr <args>` in-process and returns its error and its
// standard error.
func runSDR(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := &cobra.Command{Use: "sdr", SilenceUsage: true, SilenceErrors: true}
	AddCommands(root)
	var o, e bytes.Buffer
	root.SetOut(&o)
	root.SetErr(&e)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err = root.ExecuteContext(t.Context())
	return o.String(), e.String(), err
}

func TestExportCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	src := openBadger(t, dir)
	f := seedExportStore(t, src)

	t.Run("refuses a directory in use", func(t *testing.T) {
		_, _, err := runSDR(t, "", "export", "--storage", "badger", dir)
		if err == nil || !strings.Contains(err.Error(), "stop the gateway") {
			t.Errorf("export of a live badger directory: %v; want a lock error saying to stop the gateway", err)
		}
	})
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no storage", []string{"export", dir}, "give the store"},
		{"unknown storage", []string{"export", "--storage", "bolt", dir}, `unknown --storage "bolt"`},
		{"badger without dir", []string{"export", "--storage", "badger"}, "needs the store's directory"},
		{"badger with schema", []string{"export", "--storage", "badger", dir, "--schema", "x"}, "--schema is for --storage postgres only"},
		{"not a store", []string{"export", "--storage", "badger", t.TempDir()}, "does not hold a badger store"},
		{"postgres without url", []string{"import", "--storage", "postgres"}, "set DATABASE_URL"},
	}
	t.Setenv("DATABASE_URL", "")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := runSDR(t, "", tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}

	file := filepath.Join(t.TempDir(), "accounts.jsonl")
	stdout, stderr, err := runSDR(t, "", "export", "--storage", "badger", dir, "--output", file)
	if err != nil || stdout != "" || !strings.Contains(stderr, "exported 3 accounts and 4 keys from the badger store in "+dir) {
		t.Fatalf("export: %v\nstdout %q\nstderr %q", err, stdout, stderr)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("export file: %v, %v; want mode 0600", fi, err)
	}
	piped, _, err := runSDR(t, "", "export", "--storage", "badger", dir)
	if b, _ := os.ReadFile(file); err != nil || string(b) != piped {
		t.Errorf("export to stdout (%v) differs from --output:\n%s\nvs\n%s", err, piped, b)
	}

	dst := filepath.Join(t.TempDir(), "copy")
	_, stderr, err = runSDR(t, "", "import", "--storage", "badger", dst, "--input", file)
	if err != nil || !strings.Contains(stderr, "imported 3 accounts and 4 keys;") {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	_, stderr, err = runSDR(t, piped, "import", "--storage", "badger", dst)
	if err != nil || !strings.Contains(stderr, "skipped 3 accounts and 4 keys already present and identical; 0 conflicts") {
		t.Fatalf("import again from stdin: %v\n%s", err, stderr)
	}
	_, stderr, err = runSDR(t, piped+`{"kind":"nope"}`+"\n", "import", "--storage", "badger", dst)
	if err == nil || !strings.Contains(err.Error(), "1 records were not imported") || !strings.Contains(stderr, "line 8: unknown kind") {
		t.Errorf("import with a bad line: %v\n%s", err, stderr)
	}

	a, b := openBadger(t, dir), openBadger(t, dst)
	defer a.Close()
	defer b.Close()
	sameStores(t, a, b, f)
}

// testPostgresURL returns SDR_TEST_POSTGRES_URL or skips the test.
func testPostgresURL(t *testing.T) string {
	t.Helper()
	return testenv.PostgresURL(t, "the badger → PostgreSQL export/import test")
}

// freshPGSchema creates an empty schema sdr_export_<random>, dropped when
// the test ends.
func freshPGSchema(t *testing.T, url string) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	name := "sdr_export_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connecting to postgres: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// TestExportBadgerToPostgres is the move the README describes: export a
// stopped badger store, import into PostgreSQL, and the keys authenticate
// through the gateway's own authentication with the secrets they were
// issued with.
func TestExportBadgerToPostgres(t *testing.T) {
	url := testPostgresURL(t)
	schema := freshPGSchema(t, url)
	dir := filepath.Join(t.TempDir(), "data")
	src := openBadger(t, dir)
	f := seedExportStore(t, src)
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}

	exported, _, err := runSDR(t, "", "export", "--storage", "badger", dir)
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runSDR(t, exported, "import", "--storage", "postgres", url, "--schema", schema)
	if err != nil || !strings.Contains(stderr, "imported 3 accounts and 4 keys;") || strings.Contains(stderr, url) {
		t.Fatalf("import into postgres: %v\n%s", err, stderr)
	}
	// Again, with the URL from DATABASE_URL: nothing to do.
	t.Setenv("DATABASE_URL", url)
	_, stderr, err = runSDR(t, exported, "import", "--storage", "postgres", "--schema", schema)
	if err != nil || !strings.Contains(stderr, "imported 0 accounts and 0 keys; skipped 3 accounts and 4 keys") {
		t.Fatalf("second import into postgres: %v\n%s", err, stderr)
	}
	// Exported back, PostgreSQL gives the same lines byte for byte.
	back, _, err := runSDR(t, "", "export", "--storage", "postgres", url, "--schema", schema)
	if err != nil || back != exported {
		t.Fatalf("postgres export (%v) differs from the badger one:\n%s\nvs\n%s", err, back, exported)
	}

	pg, err := pgstore.Open(t.Context(), url, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	bs := openBadger(t, dir)
	defer bs.Close()
	sameStores(t, bs, pg, f)

	h := api.New(api.Config{Store: pg, KeyPrefix: "sdr", Logger: zap.NewNop()})
	for id, secret := range f.secrets {
		r := httptest.NewRequest("GET", "/v1/account/balance", nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		k, apiErr := h.Authenticate(r)
		switch {
		case id == f.revoked:
			if apiErr == nil || apiErr.Code != "revoked_api_key" {
				t.Errorf("revoked key %s after import: %+v, %+v", id, k, apiErr)
			}
		case apiErr != nil:
			t.Errorf("key %s does not authenticate after import: %+v", id, apiErr)
		case k.ID != id:
			t.Errorf("secret of %s authenticates as %s", id, k.ID)
		case id == f.limited && (k.CreditLimit == nil || k.CreditLimit.Credits != 2_500_000):
			t.Errorf("key %s lost its credit limit: %+v", id, k.CreditLimit)
		}
	}
	a, err := pg.GetAccount(t.Context(), "acme")
	if err != nil || a.Balance != 12_500_001-2*1725 {
		t.Errorf("acme in postgres: %+v, %v", a, err)
	}
}
