package badger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// pOAuth keys the OAuth server's records: O digest → oauthRecord. Badger
// drops each at its expiry (a TTL), so expired codes and tokens do not pile up.
const pOAuth = 'O'

func oauthKey(h [32]byte) []byte { return append([]byte{pOAuth}, h[:]...) }

// oauthRecord is an OAuth record as stored (store.OAuthRecord leaves the
// digest out of its JSON, and the digest is the badger key anyway).
type oauthRecord struct {
	Kind      string    `json:"kind"`
	GrantID   string    `json:"grant_id,omitempty"`
	Data      []byte    `json:"data"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Used      bool      `json:"used,omitempty"`
}

func (r oauthRecord) record(h [32]byte) store.OAuthRecord {
	return store.OAuthRecord{Hash: h, Kind: r.Kind, GrantID: r.GrantID, Data: r.Data,
		CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), Used: r.Used}
}

// setOAuth writes a record with badger's TTL a minute past its expiry (the
// reads check the expiry against the caller's clock themselves).
func setOAuth(txn *bdb.Txn, h [32]byte, r oauthRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	e := bdb.NewEntry(oauthKey(h), v)
	if d := time.Until(r.ExpiresAt) + time.Minute; d > 0 {
		e = e.WithTTL(d)
	}
	return txn.SetEntry(e)
}

// readOAuth reads a live record: ErrNotFound if absent or expired at now.
func readOAuth(txn *bdb.Txn, h [32]byte, now time.Time) (oauthRecord, error) {
	v, err := get(txn, oauthKey(h))
	if err != nil {
		return oauthRecord{}, err
	}
	var r oauthRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return oauthRecord{}, fmt.Errorf("decoding oauth record: %v", err)
	}
	if !now.Before(r.ExpiresAt) {
		return oauthRecord{}, store.ErrNotFound
	}
	return r, nil
}

// PutOAuth stores a record; ErrExists if its hash is taken.
func (s *Store) PutOAuth(ctx context.Context, rec store.OAuthRecord) error {
	r := oauthRecord{Kind: rec.Kind, GrantID: rec.GrantID, Data: rec.Data,
		CreatedAt: settle.Time(rec.CreatedAt), ExpiresAt: settle.Time(rec.ExpiresAt), Used: rec.Used}
	err := s.update(ctx, func(txn *bdb.Txn) error {
		if ok, err := exists(txn, oauthKey(rec.Hash)); err != nil || ok {
			if err == nil {
				err = store.ErrExists
			}
			return err
		}
		return setOAuth(txn, rec.Hash, r)
	})
	if err != nil {
		return fmt.Errorf("storing oauth %s: %w", rec.Kind, err)
	}
	return nil
}

// GetOAuth returns a live record.
func (s *Store) GetOAuth(ctx context.Context, hash [32]byte, now time.Time) (store.OAuthRecord, error) {
	if err := ctx.Err(); err != nil {
		return store.OAuthRecord{}, err
	}
	var r oauthRecord
	err := s.db.View(func(txn *bdb.Txn) (err error) {
		r, err = readOAuth(txn, hash, now)
		return err
	})
	if err != nil {
		return store.OAuthRecord{}, fmt.Errorf("reading oauth record: %w", err)
	}
	return r.record(hash), nil
}

// ExtendOAuth moves a live record's expiry (and badger's TTL) to until
// when that is later.
func (s *Store) ExtendOAuth(ctx context.Context, hash [32]byte, now, until time.Time) error {
	err := s.update(ctx, func(txn *bdb.Txn) error {
		r, err := readOAuth(txn, hash, now)
		if err != nil || !until.After(r.ExpiresAt) {
			return err
		}
		r.ExpiresAt = settle.Time(until)
		return setOAuth(txn, hash, r)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("extending oauth record: %w", err)
	}
	return err
}

// UseOAuth marks a live record used and returns it as it was. Badger's
// optimistic transactions make it atomic: of two concurrent updates of
// the record one conflicts, is retried and then reads Used true.
func (s *Store) UseOAuth(ctx context.Context, hash [32]byte, now time.Time) (store.OAuthRecord, error) {
	var before oauthRecord
	err := s.update(ctx, func(txn *bdb.Txn) (err error) {
		if before, err = readOAuth(txn, hash, now); err != nil {
			return err
		}
		after := before
		after.Used = true
		return setOAuth(txn, hash, after)
	})
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("using oauth record: %w", err)
		}
		return store.OAuthRecord{}, err
	}
	return before.record(hash), nil
}
