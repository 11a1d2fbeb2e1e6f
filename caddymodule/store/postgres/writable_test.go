package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
	"socialrouter/caddymodule/store/storetest"
)

// TestWriteFault: the database's "could not extend file … No space left on
// device" (SQLSTATE 53100) makes the store report disk_full until a write
// succeeds again (storetest.WriteFault).
func TestWriteFault(t *testing.T) {
	url := testURL(t)
	s, err := postgres.Open(t.Context(), url, postgres.WithSchema(testSchema(t, url)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	full := &pgconn.PgError{Severity: "ERROR", Code: "53100", Message: `could not extend file "base/16384/16390": No space left on device`}
	storetest.WriteFault(t, s, func(on bool) {
		if on {
			postgres.SetWriteFault(s, full)
		} else {
			postgres.SetWriteFault(s, nil)
		}
	}, store.ReasonDiskFull)
}
