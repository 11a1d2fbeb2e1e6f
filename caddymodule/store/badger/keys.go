package badger

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// keyRecord is a key as stored: store.Key leaves the digest out of its JSON
// form, so it is kept here explicitly.
type keyRecord struct {
	ID          string             `json:"id"`
	AccountID   string             `json:"account_id"`
	Name        string             `json:"name,omitempty"`
	Kind        string             `json:"kind,omitempty"`
	Hash        []byte             `json:"hash"`
	Display     string             `json:"display"`
	CreatedAt   time.Time          `json:"created_at"`
	RevokedAt   *time.Time         `json:"revoked_at,omitempty"`
	CreditLimit *store.CreditLimit `json:"credit_limit,omitempty"`
}

func encodeKey(k store.Key) ([]byte, error) {
	b, err := json.Marshal(keyRecord{
		ID: k.ID, AccountID: k.AccountID, Name: k.Name, Kind: k.Kind, Hash: k.Hash[:], Display: k.Display,
		CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt, CreditLimit: k.CreditLimit,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding key %s: %v", k.ID, err)
	}
	return b, nil
}

func readKey(txn *bdb.Txn, id string) (store.Key, error) {
	v, err := get(txn, keyKey(id))
	if err != nil {
		return store.Key{}, err
	}
	var r keyRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return store.Key{}, fmt.Errorf("decoding key %s: %v", id, err)
	}
	k := store.Key{
		ID: r.ID, AccountID: r.AccountID, Name: r.Name, Kind: r.Kind, Display: r.Display,
		CreatedAt: r.CreatedAt.UTC(), CreditLimit: r.CreditLimit,
	}
	copy(k.Hash[:], r.Hash)
	if r.RevokedAt != nil {
		t := r.RevokedAt.UTC()
		k.RevokedAt = &t
	}
	return k, nil
}

// CreateKey stores a new key (ErrNotFound if its account is absent,
// ErrExists if the id or the hash is taken).
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	if !settle.ValidID(k.ID) {
		return fmt.Errorf("creating key: invalid id %q", k.ID)
	}
	if err := k.CreditLimit.Validate(); err != nil {
		return fmt.Errorf("creating key %s: %v", k.ID, err)
	}
	k.CreatedAt = settle.Time(k.CreatedAt)
	if k.RevokedAt != nil {
		t := settle.Time(*k.RevokedAt)
		k.RevokedAt = &t
	}
	val, err := encodeKey(k)
	if err != nil {
		return err
	}
	s.keys.beginWrite(k.ID)
	defer s.keys.endWrite(k.ID)
	err = s.update(ctx, func(txn *bdb.Txn) error {
		if ok, err := exists(txn, accountKey(k.AccountID)); err != nil || !ok {
			if err == nil {
				err = store.ErrNotFound
			}
			return fmt.Errorf("account %s: %w", k.AccountID, err)
		}
		for _, key := range [][]byte{keyKey(k.ID), hashKey(k.Hash)} {
			if ok, err := exists(txn, key); err != nil || ok {
				if err == nil {
					err = store.ErrExists
				}
				return err
			}
		}
		// The sequence only ever grows (also across restarts), so the
		// list index keeps insertion order even for equal creation times.
		seq, err := s.keySeq.Next()
		if err != nil {
			return err
		}
		list := binary.BigEndian.AppendUint64(keyListPrefix(k.AccountID), seq)
		for _, e := range []struct{ k, v []byte }{
			{keyKey(k.ID), val},
			{hashKey(k.Hash), []byte(k.ID)},
			{list, []byte(k.ID)},
		} {
			if err := txn.Set(e.k, e.v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("creating key %s: %w", k.ID, err)
	}
	return nil
}

// KeyByHash finds a key, revoked or not, by the digest of its secret. It
// is served from memory when the key is cached.
func (s *Store) KeyByHash(ctx context.Context, hash [32]byte) (store.Key, error) {
	if err := ctx.Err(); err != nil {
		return store.Key{}, err
	}
	if k, ok := s.keys.byDigest(hash); ok {
		return k, nil
	}
	tok := s.keys.token()
	k, err := viewByIndex(s.db, hashKey(hash), readKey)
	if err != nil {
		return store.Key{}, fmt.Errorf("finding key by hash: %w", err)
	}
	s.keys.fill(tok, k)
	return k, nil
}

// GetKey returns a key by id, from memory when it is cached.
func (s *Store) GetKey(ctx context.Context, id string) (store.Key, error) {
	if err := ctx.Err(); err != nil {
		return store.Key{}, err
	}
	if k, ok := s.keys.byKeyID(id); ok {
		return k, nil
	}
	tok := s.keys.token()
	k, err := viewByID(s.db, id, readKey)
	if err != nil {
		return store.Key{}, fmt.Errorf("getting key %s: %w", id, err)
	}
	s.keys.fill(tok, k)
	return k, nil
}

// ListKeys returns an account's keys in creation order.
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var keys []store.Key
	err := s.db.View(func(txn *bdb.Txn) error {
		prefix := keyListPrefix(accountID)
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 16})
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			id, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			k, err := readKey(txn, string(id))
			if err != nil {
				return err
			}
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing keys of account %s: %w", accountID, err)
	}
	return keys, nil
}

// modifyKey rewrites a key under fn and returns the result.
func (s *Store) modifyKey(ctx context.Context, id string, fn func(k *store.Key)) (store.Key, error) {
	s.keys.beginWrite(id)
	defer s.keys.endWrite(id)
	var k store.Key
	err := s.update(ctx, func(txn *bdb.Txn) (err error) {
		if k, err = readKey(txn, id); err != nil {
			return err
		}
		fn(&k)
		val, err := encodeKey(k)
		if err != nil {
			return err
		}
		return txn.Set(keyKey(id), val)
	})
	return k, err
}

// SetKeyLimit sets (or with nil clears) a key's credit limit.
func (s *Store) SetKeyLimit(ctx context.Context, id string, limit *store.CreditLimit) (store.Key, error) {
	if err := limit.Validate(); err != nil {
		return store.Key{}, fmt.Errorf("setting limit of key %s: %v", id, err)
	}
	k, err := s.modifyKey(ctx, id, func(k *store.Key) {
		if limit == nil {
			k.CreditLimit = nil
			return
		}
		l := *limit
		k.CreditLimit = &l
	})
	if err != nil {
		return store.Key{}, fmt.Errorf("setting limit of key %s: %w", id, err)
	}
	return k, nil
}

// RevokeKey revokes a key at the given time; revoking twice keeps the
// first time.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) (store.Key, error) {
	at = settle.Time(at)
	k, err := s.modifyKey(ctx, id, func(k *store.Key) {
		if k.RevokedAt == nil {
			k.RevokedAt = &at
		}
	})
	if err != nil {
		return store.Key{}, fmt.Errorf("revoking key %s: %w", id, err)
	}
	return k, nil
}

// KeySpend returns what a key spent in the period bucket containing at.
func (s *Store) KeySpend(ctx context.Context, keyID, period string, at time.Time) (credits.Micros, error) {
	if !store.ValidPeriod(period) {
		return 0, fmt.Errorf("reading spend of key %s: invalid period %q", keyID, period)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var spent credits.Micros
	err := s.db.View(func(txn *bdb.Txn) (err error) {
		spent, err = readSpend(txn, spendKey(keyID, period, store.PeriodStart(period, at).Unix()))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reading spend of key %s: %v", keyID, err)
	}
	return spent, nil
}

// readSpend reads a spend counter, 0 when absent.
func readSpend(txn *bdb.Txn, key []byte) (credits.Micros, error) {
	item, err := txn.Get(key)
	if err == bdb.ErrKeyNotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var v credits.Micros
	err = item.Value(func(b []byte) error {
		if len(b) != 8 {
			return fmt.Errorf("bad spend record")
		}
		v = credits.Micros(binary.BigEndian.Uint64(b))
		return nil
	})
	return v, err
}
