package badger_test

import (
	"syscall"
	"testing"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
	"socialrouter/caddymodule/store/storetest"
)

// TestWriteFaultConformance: a commit failing at the file layer with
// ENOSPC makes the store report write_failed until a write succeeds again
// (storetest.WriteFault; the reserve check of disk_full is
// TestWritableReserve).
func TestWriteFaultConformance(t *testing.T) {
	s, err := badger.Open(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.WriteFault(t, s, func(on bool) {
		if on {
			badger.SetWriteFault(s, syscall.ENOSPC)
		} else {
			badger.SetWriteFault(s, nil)
		}
	}, store.ReasonWriteFailed)
}
