package badger

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// An account is stored in 17 bytes: a format version, the balance and the
// creation time in Unix microseconds. Settle rewrites it on every call, so
// it is kept small and cheap to decode.
const accountV1 = 1

func encodeAccount(a store.Account) []byte {
	b := make([]byte, 0, 17)
	b = append(b, accountV1)
	b = binary.BigEndian.AppendUint64(b, uint64(a.Balance))
	return binary.BigEndian.AppendUint64(b, uint64(a.CreatedAt.UnixMicro()))
}

func decodeAccount(id string, b []byte) (store.Account, error) {
	if len(b) != 17 || b[0] != accountV1 {
		return store.Account{}, fmt.Errorf("decoding account %s: bad record", id)
	}
	return store.Account{
		ID:        id,
		Balance:   credits.Micros(binary.BigEndian.Uint64(b[1:9])),
		CreatedAt: time.UnixMicro(int64(binary.BigEndian.Uint64(b[9:17]))).UTC(),
	}, nil
}

func readAccount(txn *bdb.Txn, id string) (store.Account, error) {
	v, err := get(txn, accountKey(id))
	if err != nil {
		return store.Account{}, err
	}
	return decodeAccount(id, v)
}

// CreateAccount creates an account; ErrExists if the id is taken.
func (s *Store) CreateAccount(ctx context.Context, id string, balance credits.Micros, now time.Time) (store.Account, error) {
	if !settle.ValidID(id) {
		return store.Account{}, fmt.Errorf("creating account: invalid id %q", id)
	}
	if balance < 0 {
		return store.Account{}, fmt.Errorf("creating account %s: negative balance %s", id, balance)
	}
	a := store.Account{ID: id, Balance: balance, CreatedAt: settle.Time(now)}
	err := s.write(ctx, &writeReq{account: id, apply: func(b *batch) (refused, err error) {
		_, taken, err := b.account(id)
		if err != nil || taken {
			if taken {
				return store.ErrExists, nil
			}
			return nil, err
		}
		if err := b.setAccount(a); err != nil || balance == 0 {
			return nil, err
		}
		return nil, b.openingRow(a)
	}})
	if err != nil {
		return store.Account{}, fmt.Errorf("creating account %s: %w", id, err)
	}
	return a, nil
}

// GetAccount returns an account; ErrNotFound if absent. It is served from
// memory when the account is cached.
func (s *Store) GetAccount(ctx context.Context, id string) (store.Account, error) {
	if err := ctx.Err(); err != nil {
		return store.Account{}, err
	}
	if a, ok := s.accounts.get(id); ok {
		return a, nil
	}
	tok := s.accounts.token(id)
	a, err := viewByID(s.db, id, readAccount)
	if err != nil {
		return store.Account{}, fmt.Errorf("getting account %s: %w", id, err)
	}
	s.accounts.fill(tok, a)
	return a, nil
}

// AddCredits adds amount (which may be negative, never below zero
// balance: ErrInsufficient) and returns the account.
func (s *Store) AddCredits(ctx context.Context, id string, amount credits.Micros) (store.Account, error) {
	e, err := store.LedgerEntry{AccountID: id, Kind: store.LedgerAdjustment, Amount: amount}.Prepared(time.Now())
	if err != nil {
		return store.Account{}, err
	}
	var out store.Account
	err = s.write(ctx, &writeReq{account: id, apply: func(b *batch) (refused, err error) {
		if _, refused, err = b.move(e); refused != nil || err != nil {
			return refused, err
		}
		out, _, err = b.account(id)
		return nil, err
	}})
	if err != nil {
		return store.Account{}, fmt.Errorf("adding %s credits to account %s: %w", amount, id, err)
	}
	return out, nil
}
