package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

const endpointColumns = `id, account_id, url, events, secret, previous_secret, previous_until, created_at, disabled_at, disabled_reason`

func scanEndpoint(row pgx.Row) (store.WebhookEndpoint, error) {
	var e store.WebhookEndpoint
	var prevUntil *time.Time
	err := row.Scan(&e.ID, &e.AccountID, &e.URL, &e.Events, &e.Secret, &e.PreviousSecret, &prevUntil, &e.CreatedAt, &e.DisabledAt, &e.DisabledReason)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, store.ErrNotFound
	}
	if err != nil {
		return e, err
	}
	if prevUntil != nil {
		e.PreviousUntil = prevUntil.UTC()
	}
	e.CreatedAt = e.CreatedAt.UTC()
	if e.DisabledAt != nil {
		t := e.DisabledAt.UTC()
		e.DisabledAt = &t
	}
	return e, nil
}

const deliveryColumns = `id, endpoint_id, account_id, event, payload, status, attempts, next_at, leased_until, last_attempt_at, last_status_code, last_error, created_at`

func scanDelivery(row pgx.Row) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	var leased *time.Time
	err := row.Scan(&d.ID, &d.EndpointID, &d.AccountID, &d.Event, &d.Payload, &d.Status, &d.Attempts, &d.NextAt,
		&leased, &d.LastAttemptAt, &d.LastStatusCode, &d.LastError, &d.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, store.ErrNotFound
	}
	if err != nil {
		return d, err
	}
	if leased != nil {
		d.LeasedUntil = leased.UTC()
	}
	d.NextAt, d.CreatedAt = d.NextAt.UTC(), d.CreatedAt.UTC()
	if d.LastAttemptAt != nil {
		t := d.LastAttemptAt.UTC()
		d.LastAttemptAt = &t
	}
	return d, nil
}

func collect[T any](rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = settle.Time(t)
	return &t
}

// CreateWebhook stores an endpoint.
func (s *Store) CreateWebhook(ctx context.Context, e store.WebhookEndpoint) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO webhook_endpoints (`+endpointColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.ID, e.AccountID, e.URL, e.Events, e.Secret, e.PreviousSecret, nullTime(e.PreviousUntil),
		settle.Time(e.CreatedAt), e.DisabledAt, e.DisabledReason)
	switch pgCode(err) {
	case codeForeignKeyViolation:
		err = fmt.Errorf("account %s: %w", e.AccountID, store.ErrNotFound)
	case codeUniqueViolation:
		err = store.ErrExists
	}
	if err != nil {
		return fmt.Errorf("creating webhook %s: %w", e.ID, err)
	}
	return nil
}

// GetWebhook returns an endpoint.
func (s *Store) GetWebhook(ctx context.Context, id string) (store.WebhookEndpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE id = $1`, id))
	if err != nil {
		return e, fmt.Errorf("reading webhook %s: %w", id, err)
	}
	return e, nil
}

// ListWebhooks returns an account's endpoints in creation order.
func (s *Store) ListWebhooks(ctx context.Context, accountID string) ([]store.WebhookEndpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
WHERE account_id = $1 ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("listing webhooks of %s: %w", accountID, err)
	}
	out, err := collect(rows, scanEndpoint)
	if err != nil {
		return nil, fmt.Errorf("listing webhooks of %s: %w", accountID, err)
	}
	return out, nil
}

// RotateWebhookSecret makes secret current and the current one previous,
// in one UPDATE (the right-hand sides read the row as it was).
func (s *Store) RotateWebhookSecret(ctx context.Context, id, secret string, previousUntil time.Time) (store.WebhookEndpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `
UPDATE webhook_endpoints SET previous_secret = secret, secret = $2, previous_until = $3
WHERE id = $1 RETURNING `+endpointColumns, id, secret, settle.Time(previousUntil)))
	if err != nil {
		return e, fmt.Errorf("rotating webhook secret %s: %w", id, err)
	}
	return e, nil
}

// DisableWebhook marks an endpoint disabled; the first time stays.
func (s *Store) DisableWebhook(ctx context.Context, id string, at time.Time, reason string) error {
	var found bool
	err := s.pool.QueryRow(ctx, `
WITH u AS (UPDATE webhook_endpoints SET disabled_at = $2, disabled_reason = $3
           WHERE id = $1 AND disabled_at IS NULL RETURNING 1)
SELECT EXISTS (SELECT 1 FROM u) OR EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1)`,
		id, settle.Time(at), reason).Scan(&found)
	if err == nil && !found {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("disabling webhook %s: %w", id, err)
	}
	return nil
}

// DeleteWebhook removes an endpoint; its deliveries go with it (ON
// DELETE CASCADE).
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("deleting webhook %s: %w", id, err)
	}
	return nil
}

// EnqueueDeliveries stores new pending deliveries in one transaction.
func (s *Store) EnqueueDeliveries(ctx context.Context, ds []store.WebhookDelivery) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, d := range ds {
			b.Queue(`
INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event, payload, status, attempts, next_at, leased_until, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				d.ID, d.EndpointID, d.AccountID, d.Event, d.Payload, d.Status, d.Attempts,
				settle.Time(d.NextAt), nullTime(d.LeasedUntil), settle.Time(d.CreatedAt))
		}
		return tx.SendBatch(ctx, b).Close()
	})
	switch pgCode(err) {
	case codeForeignKeyViolation:
		err = fmt.Errorf("endpoint: %w", store.ErrNotFound)
	case codeUniqueViolation:
		err = store.ErrExists
	}
	if err != nil {
		return fmt.Errorf("enqueueing deliveries: %w", err)
	}
	return nil
}

// ClaimDeliveries leases the earliest due pending deliveries. FOR UPDATE
// SKIP LOCKED lets claims on several nodes run at once, each taking rows
// the others did not lock; the lease then keeps the rows out of later
// claims while their attempt is in flight.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.WebhookDelivery, error) {
	now = settle.Time(now)
	rows, err := s.pool.Query(ctx, `
WITH c AS (
	SELECT id FROM webhook_deliveries
	WHERE status = 'pending' AND next_at <= $1 AND (leased_until IS NULL OR leased_until <= $1)
	ORDER BY GREATEST(next_at, leased_until), id
	LIMIT $3
	FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d SET leased_until = $2 FROM c WHERE d.id = c.id
RETURNING `+"d."+strings.ReplaceAll(deliveryColumns, ", ", ", d."), now, settle.Time(now.Add(lease)), limit)
	if err != nil {
		return nil, fmt.Errorf("claiming deliveries: %w", err)
	}
	out, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("claiming deliveries: %w", err)
	}
	slices.SortFunc(out, func(a, b store.WebhookDelivery) int {
		if c := a.NextAt.Compare(b.NextAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// FinishDelivery records an attempt and ends the lease, only if the
// attempt is the delivery's next one.
func (s *Store) FinishDelivery(ctx context.Context, o store.DeliveryOutcome) error {
	tag, err := s.pool.Exec(ctx, `
UPDATE webhook_deliveries SET attempts = $2, status = $3, last_attempt_at = $4, last_status_code = $5,
	last_error = $6, next_at = $7, leased_until = NULL
WHERE id = $1 AND status = 'pending' AND attempts = $2 - 1`,
		o.ID, o.Attempt, o.Status, settle.Time(o.At), o.StatusCode, o.Error, settle.Time(o.NextAt))
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrStaleClaim
	}
	if err != nil {
		return fmt.Errorf("recording delivery %s attempt %d: %w", o.ID, o.Attempt, err)
	}
	return nil
}

// GetDelivery returns a delivery.
func (s *Store) GetDelivery(ctx context.Context, id string) (store.WebhookDelivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = $1`, id))
	if err != nil {
		return d, fmt.Errorf("reading delivery %s: %w", id, err)
	}
	return d, nil
}

// ListDeliveries returns an account's deliveries, newest first.
func (s *Store) ListDeliveries(ctx context.Context, accountID, endpointID string, limit int) ([]store.WebhookDelivery, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
WHERE account_id = $1 AND ($2 = '' OR endpoint_id = $2)
ORDER BY created_at DESC, id DESC LIMIT $3`, accountID, endpointID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing deliveries of %s: %w", accountID, err)
	}
	out, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("listing deliveries of %s: %w", accountID, err)
	}
	return out, nil
}

// ResendDelivery makes a delivery pending and due at now; a lease in
// force still holds.
func (s *Store) ResendDelivery(ctx context.Context, id string, now time.Time) (store.WebhookDelivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `
UPDATE webhook_deliveries SET status = 'pending', next_at = $2 WHERE id = $1 RETURNING `+deliveryColumns,
		id, settle.Time(now)))
	if err != nil {
		return d, fmt.Errorf("resending delivery %s: %w", id, err)
	}
	return d, nil
}

// PruneDeliveries deletes the oldest finished deliveries.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
WITH d AS (
	SELECT id FROM webhook_deliveries
	WHERE status <> 'pending' AND last_attempt_at < $1
	ORDER BY last_attempt_at LIMIT $2
)
DELETE FROM webhook_deliveries w USING d WHERE w.id = d.id`, settle.Time(before), limit)
	if err != nil {
		return 0, fmt.Errorf("pruning deliveries: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
