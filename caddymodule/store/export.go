package store

import "context"

// Exporter is implemented by stores that can enumerate their accounts, for
// the offline export of accounts, keys and balances (`caddy sdr export`)
// when moving from one store to another. Keys are then read per account
// with Store.ListKeys. Both the badger and postgres stores implement it.
type Exporter interface {
	// ListAccounts returns every account, ordered by id byte by byte.
	ListAccounts(ctx context.Context) ([]Account, error)
}
