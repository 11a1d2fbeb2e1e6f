package badger

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// Webhook keys all start with pHook and a second byte, so webhooks take
// one first byte of the key space:
//
//	W e endpointID                        → hookEndpoint
//	W a account NUL created id            → "" (an account's endpoints, creation order)
//	W d deliveryID                        → hookDelivery
//	W l account NUL created id            → "" (an account's deliveries, oldest first)
//	W q due id                            → "" (pending deliveries by due time)
//	W f last id                           → "" (finished deliveries by last attempt, for pruning)
//
// created and due are 8-byte sortable Unix nanoseconds; a delivery is due
// at the later of its NextAt and LeasedUntil, so the queue index also
// keeps leased deliveries out of a claim until their lease ends.
const pHook = 'W'

const (
	hookEndpoint      = 'e'
	hookAccount       = 'a'
	hookDelivery      = 'd'
	hookAccountDelivs = 'l'
	hookQueue         = 'q'
	hookFinished      = 'f'
)

func hookKey(kind byte, parts ...[]byte) []byte {
	k := []byte{pHook, kind}
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

func stamp(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, sortable(t.UnixNano()))
}

func scoped(account string) []byte { return append([]byte(account), 0) }

// hookEndpoint is an endpoint as stored, secrets included.
type hookEndpointRec struct {
	store.WebhookEndpoint
	Secret         string    `json:"secret"`
	PreviousSecret string    `json:"previous_secret,omitempty"`
	PreviousUntil  time.Time `json:"previous_until"`
}

func (r hookEndpointRec) endpoint() store.WebhookEndpoint {
	e := r.WebhookEndpoint
	e.Secret, e.PreviousSecret, e.PreviousUntil = r.Secret, r.PreviousSecret, r.PreviousUntil.UTC()
	e.CreatedAt = e.CreatedAt.UTC()
	if e.DisabledAt != nil {
		t := e.DisabledAt.UTC()
		e.DisabledAt = &t
	}
	return e
}

func (r hookEndpointRec) listKey() []byte {
	return hookKey(hookAccount, scoped(r.AccountID), stamp(r.CreatedAt), []byte(r.ID))
}

type hookDeliveryRec struct {
	store.WebhookDelivery
	Payload     []byte    `json:"payload"`
	LeasedUntil time.Time `json:"leased_until"`
}

func (r hookDeliveryRec) delivery() store.WebhookDelivery {
	d := r.WebhookDelivery
	d.Payload, d.LeasedUntil = r.Payload, r.LeasedUntil.UTC()
	d.NextAt, d.CreatedAt = d.NextAt.UTC(), d.CreatedAt.UTC()
	if d.LastAttemptAt != nil {
		t := d.LastAttemptAt.UTC()
		d.LastAttemptAt = &t
	}
	return d
}

func (r hookDeliveryRec) listKey() []byte {
	return hookKey(hookAccountDelivs, scoped(r.AccountID), stamp(r.CreatedAt), []byte(r.ID))
}

// queueKey is the delivery's entry in the due queue; ok false when it is
// not pending (no entry).
func (r hookDeliveryRec) queueKey() (key []byte, ok bool) {
	if r.Status != store.DeliveryPending {
		return nil, false
	}
	due := r.NextAt
	if r.LeasedUntil.After(due) {
		due = r.LeasedUntil
	}
	return hookKey(hookQueue, stamp(due), []byte(r.ID)), true
}

// indexKeys are the delivery's entries in the due queue (pending) or the
// finished index.
func (r hookDeliveryRec) indexKeys() [][]byte {
	if k, ok := r.queueKey(); ok {
		return [][]byte{k}
	}
	if r.LastAttemptAt != nil {
		return [][]byte{hookKey(hookFinished, stamp(*r.LastAttemptAt), []byte(r.ID))}
	}
	return nil
}

func readJSON[T any](txn *bdb.Txn, key []byte) (T, error) {
	var v T
	b, err := get(txn, key)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("decoding %q: %v", key[:2], err)
	}
	return v, nil
}

func putJSON(txn *bdb.Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return txn.Set(key, b)
}

func readEndpoint(txn *bdb.Txn, id string) (hookEndpointRec, error) {
	return readJSON[hookEndpointRec](txn, hookKey(hookEndpoint, []byte(id)))
}

func readDelivery(txn *bdb.Txn, id string) (hookDeliveryRec, error) {
	return readJSON[hookDeliveryRec](txn, hookKey(hookDelivery, []byte(id)))
}

// putDelivery writes a delivery and moves its queue entry from what was
// (nil: a new delivery).
func putDelivery(txn *bdb.Txn, was *hookDeliveryRec, r hookDeliveryRec) error {
	if was != nil {
		for _, k := range was.indexKeys() {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
	}
	for _, k := range r.indexKeys() {
		if err := txn.Set(k, nil); err != nil {
			return err
		}
	}
	return putJSON(txn, hookKey(hookDelivery, []byte(r.ID)), r)
}

// CreateWebhook stores an endpoint.
func (s *Store) CreateWebhook(ctx context.Context, e store.WebhookEndpoint) error {
	r := hookEndpointRec{WebhookEndpoint: e, Secret: e.Secret, PreviousSecret: e.PreviousSecret, PreviousUntil: settle.Time(e.PreviousUntil)}
	r.CreatedAt = settle.Time(e.CreatedAt)
	err := s.update(ctx, func(txn *bdb.Txn) error {
		if ok, err := exists(txn, accountKey(e.AccountID)); err != nil || !ok {
			if err == nil {
				err = store.ErrNotFound
			}
			return fmt.Errorf("account %s: %w", e.AccountID, err)
		}
		key := hookKey(hookEndpoint, []byte(e.ID))
		if ok, err := exists(txn, key); err != nil || ok {
			if err == nil {
				err = store.ErrExists
			}
			return err
		}
		if err := txn.Set(r.listKey(), nil); err != nil {
			return err
		}
		return putJSON(txn, key, r)
	})
	if err != nil {
		return fmt.Errorf("creating webhook %s: %w", e.ID, err)
	}
	return nil
}

// GetWebhook returns an endpoint.
func (s *Store) GetWebhook(ctx context.Context, id string) (store.WebhookEndpoint, error) {
	r, err := viewByID(s.db, id, readEndpoint)
	if err != nil {
		return store.WebhookEndpoint{}, fmt.Errorf("reading webhook %s: %w", id, err)
	}
	return r.endpoint(), nil
}

// ListWebhooks returns an account's endpoints in creation order.
func (s *Store) ListWebhooks(ctx context.Context, accountID string) ([]store.WebhookEndpoint, error) {
	var out []store.WebhookEndpoint
	err := s.db.View(func(txn *bdb.Txn) error {
		prefix := hookKey(hookAccount, scoped(accountID))
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			id := it.Item().Key()[len(prefix)+8:]
			r, err := readEndpoint(txn, string(id))
			if err != nil {
				return err
			}
			out = append(out, r.endpoint())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing webhooks of %s: %w", accountID, err)
	}
	return out, nil
}

// updateEndpoint applies fn to a stored endpoint in one transaction.
func (s *Store) updateEndpoint(ctx context.Context, id string, fn func(*hookEndpointRec)) (hookEndpointRec, error) {
	var r hookEndpointRec
	err := s.update(ctx, func(txn *bdb.Txn) (err error) {
		if r, err = readEndpoint(txn, id); err != nil {
			return err
		}
		fn(&r)
		return putJSON(txn, hookKey(hookEndpoint, []byte(id)), r)
	})
	return r, err
}

// RotateWebhookSecret makes secret current and the current one previous.
func (s *Store) RotateWebhookSecret(ctx context.Context, id, secret string, previousUntil time.Time) (store.WebhookEndpoint, error) {
	r, err := s.updateEndpoint(ctx, id, func(r *hookEndpointRec) {
		r.PreviousSecret, r.Secret, r.PreviousUntil = r.Secret, secret, settle.Time(previousUntil)
	})
	if err != nil {
		return store.WebhookEndpoint{}, fmt.Errorf("rotating webhook secret %s: %w", id, err)
	}
	return r.endpoint(), nil
}

// DisableWebhook marks an endpoint disabled; the first time stays.
func (s *Store) DisableWebhook(ctx context.Context, id string, at time.Time, reason string) error {
	_, err := s.updateEndpoint(ctx, id, func(r *hookEndpointRec) {
		if r.DisabledAt == nil {
			t := settle.Time(at)
			r.DisabledAt, r.DisabledReason = &t, reason
		}
	})
	if err != nil {
		return fmt.Errorf("disabling webhook %s: %w", id, err)
	}
	return nil
}

// deleteBatch bounds the deliveries one transaction of DeleteWebhook
// deletes: badger refuses a transaction past its size limit.
const deleteBatch = 1000

// DeleteWebhook removes an endpoint and its deliveries, found through the
// account's delivery list. The deliveries go in transactions of
// deleteBatch, the endpoint with the last one, so a crash midway leaves
// the endpoint (delete it again) and never deliveries without one.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	var after []byte // the last list key scanned by a committed batch
	for done := false; !done; {
		var last []byte
		var more bool
		err := s.update(ctx, func(txn *bdb.Txn) error {
			r, err := readEndpoint(txn, id)
			if err != nil {
				return err
			}
			prefix := hookKey(hookAccountDelivs, scoped(r.AccountID))
			it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix})
			var drop [][]byte
			last = nil
			n := 0
			seek := prefix
			if after != nil {
				seek = append(append([]byte{}, after...), 0)
			}
			for it.Seek(seek); it.ValidForPrefix(prefix) && n < deleteBatch; it.Next() {
				key := it.Item().KeyCopy(nil)
				last = key
				d, err := readDelivery(txn, string(key[len(prefix)+8:]))
				if err != nil {
					it.Close()
					return err
				}
				if d.EndpointID != id {
					continue
				}
				drop = append(drop, key, hookKey(hookDelivery, []byte(d.ID)))
				drop = append(drop, d.indexKeys()...)
				n++
			}
			more = it.ValidForPrefix(prefix)
			it.Close()
			if !more {
				drop = append(drop, r.listKey(), hookKey(hookEndpoint, []byte(id)))
			}
			for _, k := range drop {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("deleting webhook %s: %w", id, err)
		}
		after, done = last, !more
	}
	return nil
}

// EnqueueDeliveries stores new pending deliveries, all or none.
func (s *Store) EnqueueDeliveries(ctx context.Context, ds []store.WebhookDelivery) error {
	err := s.update(ctx, func(txn *bdb.Txn) error {
		for _, d := range ds {
			r := hookDeliveryRec{WebhookDelivery: d, Payload: d.Payload, LeasedUntil: settle.Time(d.LeasedUntil)}
			r.NextAt, r.CreatedAt = settle.Time(d.NextAt), settle.Time(d.CreatedAt)
			if ok, err := exists(txn, hookKey(hookDelivery, []byte(d.ID))); err != nil || ok {
				if err == nil {
					err = fmt.Errorf("delivery %s: %w", d.ID, store.ErrExists)
				}
				return err
			}
			if err := txn.Set(r.listKey(), nil); err != nil {
				return err
			}
			if err := putDelivery(txn, nil, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("enqueueing deliveries: %w", err)
	}
	return nil
}

// ClaimDeliveries leases the earliest due pending deliveries. Badger's
// optimistic transactions make a claim atomic: two claims that read the
// same queue entries conflict, and the retried one sees the leases.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.WebhookDelivery, error) {
	now = settle.Time(now)
	until := settle.Time(now.Add(lease))
	var out []store.WebhookDelivery
	err := s.update(ctx, func(txn *bdb.Txn) error {
		out = out[:0]
		prefix := hookKey(hookQueue)
		end := stamp(now)
		var due []string
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix})
		for it.Seek(prefix); it.ValidForPrefix(prefix) && len(due) < limit; it.Next() {
			k := it.Item().Key()
			if string(k[len(prefix):len(prefix)+8]) > string(end) {
				break
			}
			due = append(due, string(k[len(prefix)+8:]))
		}
		it.Close()
		for _, id := range due {
			was, err := readDelivery(txn, id)
			if err != nil {
				return err
			}
			r := was
			r.LeasedUntil = until
			if err := putDelivery(txn, &was, r); err != nil {
				return err
			}
			out = append(out, r.delivery())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claiming deliveries: %w", err)
	}
	return out, nil
}

// FinishDelivery records an attempt and ends the lease.
func (s *Store) FinishDelivery(ctx context.Context, o store.DeliveryOutcome) error {
	err := s.update(ctx, func(txn *bdb.Txn) error {
		was, err := readDelivery(txn, o.ID)
		if errors.Is(err, store.ErrNotFound) {
			return store.ErrStaleClaim
		}
		if err != nil {
			return err
		}
		if was.Status != store.DeliveryPending || was.Attempts != o.Attempt-1 {
			return store.ErrStaleClaim
		}
		r := was
		at := settle.Time(o.At)
		r.Attempts, r.Status, r.LastAttemptAt = o.Attempt, o.Status, &at
		r.LastStatusCode, r.LastError = o.StatusCode, o.Error
		r.NextAt, r.LeasedUntil = settle.Time(o.NextAt), time.Time{}
		return putDelivery(txn, &was, r)
	})
	if err != nil {
		return fmt.Errorf("recording delivery %s attempt %d: %w", o.ID, o.Attempt, err)
	}
	return nil
}

// GetDelivery returns a delivery.
func (s *Store) GetDelivery(ctx context.Context, id string) (store.WebhookDelivery, error) {
	r, err := viewByID(s.db, id, readDelivery)
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("reading delivery %s: %w", id, err)
	}
	return r.delivery(), nil
}

// ListDeliveries returns an account's deliveries, newest first.
func (s *Store) ListDeliveries(ctx context.Context, accountID, endpointID string, limit int) ([]store.WebhookDelivery, error) {
	var out []store.WebhookDelivery
	err := s.db.View(func(txn *bdb.Txn) error {
		prefix := hookKey(hookAccountDelivs, scoped(accountID))
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		for it.Seek(append(append([]byte{}, prefix...), 0xFF)); it.ValidForPrefix(prefix) && len(out) < limit; it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := readDelivery(txn, string(it.Item().Key()[len(prefix)+8:]))
			if err != nil {
				return err
			}
			if endpointID == "" || r.EndpointID == endpointID {
				out = append(out, r.delivery())
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing deliveries of %s: %w", accountID, err)
	}
	return out, nil
}

// ResendDelivery makes a delivery pending and due at now.
func (s *Store) ResendDelivery(ctx context.Context, id string, now time.Time) (store.WebhookDelivery, error) {
	var r hookDeliveryRec
	err := s.update(ctx, func(txn *bdb.Txn) error {
		was, err := readDelivery(txn, id)
		if err != nil {
			return err
		}
		r = was
		r.Status, r.NextAt = store.DeliveryPending, settle.Time(now)
		return putDelivery(txn, &was, r)
	})
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("resending delivery %s: %w", id, err)
	}
	return r.delivery(), nil
}

// PruneDeliveries deletes the oldest finished deliveries, by the
// finished index.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	end := string(stamp(settle.Time(before)))
	n := 0
	err := s.update(ctx, func(txn *bdb.Txn) error {
		n = 0
		prefix := hookKey(hookFinished)
		var ids []string
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix})
		for it.Seek(prefix); it.ValidForPrefix(prefix) && len(ids) < limit; it.Next() {
			k := it.Item().Key()
			if string(k[len(prefix):len(prefix)+8]) >= end {
				break
			}
			ids = append(ids, string(k[len(prefix)+8:]))
		}
		it.Close()
		for _, id := range ids {
			r, err := readDelivery(txn, id)
			if err != nil {
				return err
			}
			for _, k := range append(r.indexKeys(), r.listKey(), hookKey(hookDelivery, []byte(id))) {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pruning deliveries: %w", err)
	}
	return n, nil
}

// releaseDeliveryLeases, as the store opens, takes back every delivery
// lease: one process owns a badger store, so a lease found at open was
// taken by a process that died mid-attempt, and its delivery is due again
// at its own time rather than when the dead lease would have run out
// (minutes later). The attempt the dead process made, if any, was never
// recorded; the receiver tells a retry by its unchanged webhook-id.
func (s *Store) releaseDeliveryLeases() error {
	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	return s.db.Update(func(txn *bdb.Txn) error {
		prefix := hookKey(hookQueue)
		var ids []string
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix})
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			k := it.Item().Key()
			ids = append(ids, string(k[len(prefix)+8:]))
		}
		it.Close()
		for _, id := range ids {
			was, err := readDelivery(txn, id)
			if err != nil {
				return err
			}
			if was.LeasedUntil.IsZero() {
				continue
			}
			r := was
			r.LeasedUntil = time.Time{}
			if err := putDelivery(txn, &was, r); err != nil {
				return err
			}
		}
		return nil
	})
}
