package storetest

import (
	"bytes"
	"testing"

	"socialrouter/caddymodule/store"
)

// capabilitySuites check what a store's Capabilities list offers: each
// listed part works (one that is not listed is the store's own choice,
// e.g. PostgreSQL backed up with pg_dump).
var capabilitySuites = []suite{
	{"capability_backup", testCapabilityBackup},
}

// testCapabilityBackup: a listed backup streams the store's entries and a
// version to continue from; the next, incremental, backup streams less
// than the full one and a version no earlier.
func testCapabilityBackup(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	b := s.Capabilities().Backup
	if b == nil {
		t.Skipf("%T lists no online backup", s)
	}
	mustAccount(t, s, "acme", cr(1))
	var full bytes.Buffer
	next, err := b.Backup(ctx(t), &full, 0)
	if err != nil || next == 0 || full.Len() == 0 {
		t.Fatalf("full backup: next %d, %d bytes, %v; want a version and a stream", next, full.Len(), err)
	}
	var incr bytes.Buffer
	next2, err := b.Backup(ctx(t), &incr, next)
	if err != nil || next2 < next || incr.Len() >= full.Len() {
		t.Fatalf("incremental backup since %d: next %d, %d bytes (full %d), %v", next, next2, incr.Len(), full.Len(), err)
	}
}
