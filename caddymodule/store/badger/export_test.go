package badger

import bdb "github.com/dgraph-io/badger/v4"

// OpenTuned opens the store with the badger options it would use, changed
// by tune, so benchmarks can compare option sets in one process.
func OpenTuned(dir string, opts Options, tune func(bdb.Options) bdb.Options) (*Store, error) {
	return open(dir, opts, tune(badgerOptions(dir, opts)))
}

// SetWriteFault makes every commit and probe write of s fail with err
// (nil: succeed again), as the file layer would on a full or failing disk.
func SetWriteFault(s *Store, err error) {
	if err == nil {
		s.writeFault.Store(nil)
		return
	}
	s.writeFault.Store(&err)
}
