package badger

import bdb "github.com/dgraph-io/badger/v4"

// OpenTuned opens the store with the badger options it would use, changed
// by tune, so benchmarks can compare option sets in one process.
func OpenTuned(dir string, opts Options, tune func(bdb.Options) bdb.Options) (*Store, error) {
	return open(dir, opts, tune(badgerOptions(dir, opts)))
}
