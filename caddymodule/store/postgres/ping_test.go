package postgres_test

import (
	"testing"

	"socialrouter/caddymodule/store/postgres"
)

// TestPing: an open store answers, a closed pool does not.
func TestPing(t *testing.T) {
	url := testURL(t)
	s, err := postgres.Open(t.Context(), url, postgres.WithSchema(testSchema(t, url)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("ping of an open store: %v", err)
	}
	s.Close()
	if err := s.Ping(t.Context()); err == nil {
		t.Error("ping of a closed store succeeded")
	}
}
