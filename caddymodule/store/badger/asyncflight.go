package badger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
)

// flightIndex knows the async runs in flight of each account, in memory:
// a badger directory is opened by one process, so every create and
// delete passes here, and the index is rebuilt from the runs as the store
// opens. It counts an account's runs without a scan, and a create
// reserves its place under the mutex before its transaction, so
// concurrent creates cannot take an account past its cap.
type flightIndex struct {
	mu      sync.Mutex
	runs    map[string]map[string]struct{} // account → run ids
	account map[string]string              // run id → account
}

// reserve adds run id of account unless the account already has max runs
// (max > 0) or the id is known: ErrAsyncLimit, ErrExists.
func (f *flightIndex) reserve(account, id string, max int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.account[id]; ok {
		return store.ErrExists
	}
	if max > 0 && len(f.runs[account]) >= max {
		return store.ErrAsyncLimit
	}
	f.add(account, id)
	return nil
}

// restore adds a stored run as the store opens.
func (f *flightIndex) restore(account, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.add(account, id)
}

// add adds run id of account; the caller holds mu.
func (f *flightIndex) add(account, id string) {
	if f.runs == nil {
		f.runs, f.account = map[string]map[string]struct{}{}, map[string]string{}
	}
	if f.runs[account] == nil {
		f.runs[account] = map[string]struct{}{}
	}
	f.runs[account][id] = struct{}{}
	f.account[id] = account
}

// remove forgets run id, if known.
func (f *flightIndex) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	account, ok := f.account[id]
	if !ok {
		return
	}
	delete(f.account, id)
	delete(f.runs[account], id)
	if len(f.runs[account]) == 0 {
		delete(f.runs, account)
	}
}

func (f *flightIndex) count(account string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.runs[account])
}

// newest returns at most limit of the account's run ids, newest first
// (run ids are ULIDs: they sort by time).
func (f *flightIndex) newest(account string, limit int) []string {
	f.mu.Lock()
	ids := make([]string, 0, len(f.runs[account]))
	for id := range f.runs[account] {
		ids = append(ids, id)
	}
	f.mu.Unlock()
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(b, a) })
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	return ids
}

// CountAsyncRuns counts an account's async runs in flight.
func (s *Store) CountAsyncRuns(ctx context.Context, accountID string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return s.async.flight.count(accountID), nil
}

// ListAsyncRuns returns at most limit of an account's async runs in
// flight, newest first.
func (s *Store) ListAsyncRuns(ctx context.Context, accountID string, limit int) ([]store.AsyncRun, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids := s.async.flight.newest(accountID, limit)
	out := make([]store.AsyncRun, 0, len(ids))
	err := s.db.View(func(txn *bdb.Txn) error {
		for _, id := range ids {
			r, err := readAsync(txn, id)
			if errors.Is(err, store.ErrNotFound) { // settled since the index was read
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, r.run(id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing async runs: %w", err)
	}
	return out, nil
}
