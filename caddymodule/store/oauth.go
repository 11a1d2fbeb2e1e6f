package store

import (
	"context"
	"time"
)

// KindOAuth is the Kind of a key that is an OAuth grant: a member's consent
// to an MCP client. Modelling a grant as a key gives it a key's credit
// limit, holds, spend, last use and revocation; it has no secret of its
// own (its Hash is random), the client holds short-lived tokens instead.
const KindOAuth = "oauth"

// OAuthRecord is one secret of the OAuth server: a client registration,
// an authorization code, an access token or a refresh token. Only the
// SHA-256 of the secret (or of the public client id) is the key, so a
// leaked store leaks no usable token.
type OAuthRecord struct {
	Hash      [32]byte  `json:"-"`
	Kind      string    `json:"kind"`               // client, code, access, refresh
	GrantID   string    `json:"grant_id,omitempty"` // the grant (a key of kind oauth)
	Data      []byte    `json:"data"`               // the record's fields, JSON, read by package oauth
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Used is set by UseOAuth: a code or refresh token seen twice is a
	// replay, and the grant it belongs to is revoked.
	Used bool `json:"used"`
}

// OAuth is the persistence of the OAuth server; records work across nodes
// on one PostgreSQL as keys do.
type OAuth interface {
	// PutOAuth stores a record; ErrExists if its hash is taken.
	PutOAuth(ctx context.Context, rec OAuthRecord) error
	// GetOAuth returns a record; ErrNotFound if absent or past its
	// ExpiresAt at now.
	GetOAuth(ctx context.Context, hash [32]byte, now time.Time) (OAuthRecord, error)
	// UseOAuth, in one atomic step, marks a live record used and returns
	// it as it was before: of two concurrent calls exactly one sees
	// Used false. ErrNotFound if absent or expired.
	UseOAuth(ctx context.Context, hash [32]byte, now time.Time) (OAuthRecord, error)
	// ExtendOAuth moves a live record's ExpiresAt to until when that is
	// later (a registration in use lives on); never earlier. ErrNotFound
	// if absent or expired at now.
	ExtendOAuth(ctx context.Context, hash [32]byte, now, until time.Time) error
}
