package badger_test

import (
	"testing"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
	"socialrouter/caddymodule/store/storetest"
)

// BenchmarkSettle measures durable (fsynced) settles per second with 32
// concurrent callers, each on its own account or all on one hot account.
// The hot account should reach at least 0.9 × the separate-accounts rate.
func BenchmarkSettle(b *testing.B) {
	storetest.BenchSettle(b, func(b *testing.B) store.Store {
		s, err := badger.Open(b.TempDir(), badger.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
