package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// CreateInvite stores an invite.
func (s *Store) CreateInvite(ctx context.Context, inv store.Invite) error {
	email := strings.ToLower(inv.Email)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM members WHERE email = $1)`, email).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return store.ErrExists
		}
		_, err := tx.Exec(ctx, `INSERT INTO invites (token_hash, account_id, email, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
			inv.TokenHash[:], inv.AccountID, email, settle.Time(inv.CreatedAt), settle.Time(inv.ExpiresAt))
		switch pgCode(err) {
		case codeForeignKeyViolation:
			return fmt.Errorf("account %s: %w", inv.AccountID, store.ErrNotFound)
		case codeUniqueViolation:
			return store.ErrExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("creating invite for %s: %w", email, err)
	}
	return nil
}

// AcceptInvite consumes an invite once (the DELETE … RETURNING takes it
// from any concurrent acceptance) and creates its member.
func (s *Store) AcceptInvite(ctx context.Context, tokenHash [32]byte, m store.Member, now time.Time) (store.Member, error) {
	if !settle.ValidID(m.ID) {
		return store.Member{}, fmt.Errorf("accepting invite: invalid member id %q", m.ID)
	}
	m.CreatedAt = settle.Time(now)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM invites WHERE token_hash = $1 AND expires_at > $2 RETURNING account_id, email`,
			tokenHash[:], settle.Time(now)).Scan(&m.AccountID, &m.Email)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO members (id, account_id, email, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)`,
			m.ID, m.AccountID, m.Email, m.PasswordHash, m.CreatedAt)
		if pgCode(err) == codeUniqueViolation {
			return store.ErrExists
		}
		return err
	})
	if err != nil {
		return store.Member{}, fmt.Errorf("accepting invite: %w", err)
	}
	return m, nil
}

// FindInvite returns an unexpired, unused invite.
func (s *Store) FindInvite(ctx context.Context, tokenHash [32]byte, now time.Time) (store.Invite, error) {
	inv := store.Invite{TokenHash: tokenHash}
	err := s.pool.QueryRow(ctx, `SELECT account_id, email, created_at, expires_at FROM invites WHERE token_hash = $1 AND expires_at > $2`,
		tokenHash[:], settle.Time(now)).Scan(&inv.AccountID, &inv.Email, &inv.CreatedAt, &inv.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Invite{}, fmt.Errorf("finding invite: %w", err)
	}
	inv.CreatedAt, inv.ExpiresAt = inv.CreatedAt.UTC(), inv.ExpiresAt.UTC()
	return inv, nil
}

const memberColumns = `id, account_id, email, password_hash, created_at`

func scanMember(row pgx.Row) (store.Member, error) {
	var m store.Member
	err := row.Scan(&m.ID, &m.AccountID, &m.Email, &m.PasswordHash, &m.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Member{}, store.ErrNotFound
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return m, err
}

// MemberByEmail finds a member by email.
func (s *Store) MemberByEmail(ctx context.Context, email string) (store.Member, error) {
	m, err := scanMember(s.pool.QueryRow(ctx, `SELECT `+memberColumns+` FROM members WHERE email = $1`, strings.ToLower(email)))
	if err != nil {
		return store.Member{}, fmt.Errorf("finding member by email: %w", err)
	}
	return m, nil
}

// GetMember returns a member by id.
func (s *Store) GetMember(ctx context.Context, id string) (store.Member, error) {
	m, err := scanMember(s.pool.QueryRow(ctx, `SELECT `+memberColumns+` FROM members WHERE id = $1`, id))
	if err != nil {
		return store.Member{}, fmt.Errorf("getting member %s: %w", id, err)
	}
	return m, nil
}

// SetPassword replaces a member's password hash.
func (s *Store) SetPassword(ctx context.Context, memberID, hash string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE members SET password_hash = $2 WHERE id = $1`, memberID, hash)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("setting password of member %s: %w", memberID, err)
	}
	return nil
}

// CreateSession stores a session, and drops the member's expired ones.
func (s *Store) CreateSession(ctx context.Context, ss store.Session) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE member_id = $1 AND expires_at <= $2`, ss.MemberID, settle.Time(ss.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
INSERT INTO sessions (id, member_id, account_id, created_at, last_seen, expires_at, user_agent, ip)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			ss.ID, ss.MemberID, ss.AccountID, settle.Time(ss.CreatedAt), settle.Time(ss.LastSeen), settle.Time(ss.ExpiresAt), ss.UserAgent, ss.IP)
		switch pgCode(err) {
		case codeForeignKeyViolation:
			return fmt.Errorf("member %s: %w", ss.MemberID, store.ErrNotFound)
		case codeUniqueViolation:
			return store.ErrExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("creating session: %w", err)
	}
	return nil
}

const sessionColumns = `id, member_id, account_id, created_at, last_seen, expires_at, user_agent, ip`

func scanSession(row pgx.Row) (store.Session, error) {
	var ss store.Session
	err := row.Scan(&ss.ID, &ss.MemberID, &ss.AccountID, &ss.CreatedAt, &ss.LastSeen, &ss.ExpiresAt, &ss.UserAgent, &ss.IP)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, store.ErrNotFound
	}
	ss.CreatedAt, ss.LastSeen, ss.ExpiresAt = ss.CreatedAt.UTC(), ss.LastSeen.UTC(), ss.ExpiresAt.UTC()
	return ss, err
}

// GetSession returns an unexpired session.
func (s *Store) GetSession(ctx context.Context, id string, now time.Time) (store.Session, error) {
	ss, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1 AND expires_at > $2`, id, now))
	if err != nil {
		return store.Session{}, fmt.Errorf("getting session: %w", err)
	}
	return ss, nil
}

// TouchSession sets a session's LastSeen.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET last_seen = $2 WHERE id = $1`, id, settle.Time(at))
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("touching session: %w", err)
	}
	return nil
}

// ListSessions returns a member's unexpired sessions, newest first.
func (s *Store) ListSessions(ctx context.Context, memberID string, now time.Time) ([]store.Session, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE member_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id`, memberID, now)
	if err != nil {
		return nil, fmt.Errorf("listing sessions of member %s: %v", memberID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Session, error) { return scanSession(r) })
	if err != nil {
		return nil, fmt.Errorf("listing sessions of member %s: %v", memberID, err)
	}
	return out, nil
}

// DeleteSession removes a session.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id); err != nil {
		return fmt.Errorf("deleting session: %v", err)
	}
	return nil
}

// AddActivity appends to an account's activity trail.
func (s *Store) AddActivity(ctx context.Context, a store.Activity) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO activity (account_id, at, member, action, detail) VALUES ($1, $2, $3, $4, $5)`,
		a.AccountID, settle.Time(a.At), a.Member, a.Action, a.Detail)
	if err != nil {
		return fmt.Errorf("adding activity: %v", err)
	}
	return nil
}

// ListActivity returns an account's latest entries, newest first.
func (s *Store) ListActivity(ctx context.Context, accountID string, limit int) ([]store.Activity, error) {
	rows, err := s.pool.Query(ctx, `SELECT account_id, at, member, action, detail FROM activity WHERE account_id = $1 ORDER BY at DESC, seq DESC LIMIT $2`, accountID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing activity of account %s: %v", accountID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Activity, error) {
		var a store.Activity
		err := r.Scan(&a.AccountID, &a.At, &a.Member, &a.Action, &a.Detail)
		a.At = a.At.UTC()
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing activity of account %s: %v", accountID, err)
	}
	return out, nil
}

// ListRuns returns an account's runs matching f, newest first, reading
// the summary fields from their columns.
func (s *Store) ListRuns(ctx context.Context, accountID string, f store.RunFilter) ([]store.RunSummary, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = store.DefaultRunLimit
	}
	var since, until *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	if !f.Until.IsZero() {
		until = &f.Until
	}
	rows, err := s.pool.Query(ctx, `
SELECT id, kind, status, platform, service, served_by, COALESCE(key_id, ''), credits_used, returned, created_at
FROM runs
WHERE account_id = $1
  AND ($2 = '' OR service = $2)
  AND ($3 = '' OR status = $3)
  AND ($4::timestamptz IS NULL OR created_at >= $4)
  AND ($5::timestamptz IS NULL OR created_at < $5)
  AND ($7 = '' OR platform = $7)
ORDER BY created_at DESC, id DESC
LIMIT $6`, accountID, f.Service, f.Status, since, until, limit, f.Platform)
	if err != nil {
		return nil, fmt.Errorf("listing runs of account %s: %v", accountID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.RunSummary, error) {
		var x store.RunSummary
		var used int64
		err := r.Scan(&x.ID, &x.Kind, &x.Status, &x.Platform, &x.Service, &x.ServedBy, &x.KeyID, &used, &x.Records, &x.CreatedAt)
		x.CreditsUsed = credits.Micros(used)
		x.CreatedAt = x.CreatedAt.UTC()
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing runs of account %s: %v", accountID, err)
	}
	return out, nil
}
