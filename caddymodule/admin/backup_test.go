package admin

import (
	"net/http/httptest"
	"strconv"
	"testing"

	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
)

// withoutBackup is a real store whose capability list names no backup,
// as PostgreSQL's does.
type withoutBackup struct{ store.Store }

func (withoutBackup) Capabilities() store.Capabilities { return store.Capabilities{} }

// TestBackupCapability: GET /sdr/backup finds the backup through the
// store's capability list, under the metrics decorator too, and answers
// 501 for a store that lists none.
func TestBackupCapability(t *testing.T) {
	s, err := badgerstore.Open(t.TempDir(), badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tests := []struct {
		name   string
		st     Store
		status int
	}{
		{"badger", s, 200},
		{"badger under the metrics decorator", metrics.InstrumentStore(s, "t_admin_backup"), 200},
		{"a store with no backup", metrics.InstrumentStore(withoutBackup{s}, "t_admin_nobackup"), 501},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := New(Config{Store: tc.st, Registry: &registry.Registry{}, KeyPrefix: "sdr"})
			rec := httptest.NewRecorder()
			status := 200
			if err := h.Serve(rec, httptest.NewRequest("GET", "/sdr/backup", nil)); err != nil {
				e, ok := err.(*Error)
				if !ok {
					t.Fatalf("untyped error %v", err)
				}
				status = e.Status
			}
			if status != tc.status {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			if tc.status != 200 {
				return
			}
			if _, err := strconv.ParseUint(rec.Header().Get(BackupVersionTrailer), 10, 64); err != nil || rec.Body.Len() == 0 {
				t.Errorf("trailer %q, %d bytes: want a version and a stream", rec.Header().Get(BackupVersionTrailer), rec.Body.Len())
			}
		})
	}
}
