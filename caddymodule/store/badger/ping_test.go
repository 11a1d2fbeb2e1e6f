package badger_test

import (
	"testing"

	"socialrouter/caddymodule/store/badger"
)

// TestPing: an open store answers, a closed one does not.
func TestPing(t *testing.T) {
	s, err := badger.Open(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("ping of an open store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("ping of a closed store succeeded")
	}
}
