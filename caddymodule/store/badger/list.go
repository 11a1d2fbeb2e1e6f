package badger

import (
	"context"
	"fmt"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
)

// ListAccounts returns every account, ordered by id byte by byte (badger's
// key order).
func (s *Store) ListAccounts(ctx context.Context) ([]store.Account, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var accounts []store.Account
	err := s.db.View(func(txn *bdb.Txn) error {
		prefix := []byte{pAccount}
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			id := string(item.Key()[1:])
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			a, err := decodeAccount(id, v)
			if err != nil {
				return err
			}
			accounts = append(accounts, a)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing accounts: %w", err)
	}
	return accounts, nil
}

var _ store.Exporter = (*Store)(nil)
