package postgres_test

import (
	"strings"
	"testing"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
	"socialrouter/caddymodule/store/storetest"
)

// BenchmarkSettle measures settles per second with 32 concurrent callers,
// each on its own account or all on one hot account (whose row lock
// serializes them).
func BenchmarkSettle(b *testing.B) {
	url := testURL(b)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	storetest.BenchSettle(b, func(b *testing.B) store.Store {
		s, err := postgres.Open(b.Context(), url+sep+"pool_max_conns=32", postgres.WithSchema(testSchema(b, url)))
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
