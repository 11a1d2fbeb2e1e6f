package store

import (
	"context"
	"time"

	"socialrouter/caddymodule/credits"
)

// Member is a person who signs in to an account's dashboard. Emails are
// unique across accounts (stored lower-cased), so signing in needs no
// account id.
type Member struct {
	ID           string    `json:"id"`
	AccountID    string    `json:"account_id"`
	Email        string    `json:"email"`
	PasswordHash string    `json:"-"` // argon2id, PHC string form
	CreatedAt    time.Time `json:"created_at"`
}

// Invite is a pending invitation. Only the SHA-256 of its one-time token
// is stored; accepting it creates the member and marks it used.
type Invite struct {
	TokenHash [32]byte  `json:"-"`
	AccountID string    `json:"account_id"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Session is a signed-in browser. ID is the hex SHA-256 of the cookie's
// token, so a leaked store does not leak usable cookies.
type Session struct {
	ID        string    `json:"id"`
	MemberID  string    `json:"member_id"`
	AccountID string    `json:"account_id"`
	CreatedAt time.Time `json:"created_at"`
	LastSeen  time.Time `json:"last_seen"`
	ExpiresAt time.Time `json:"expires_at"` // absolute end
	UserAgent string    `json:"user_agent,omitempty"`
	IP        string    `json:"ip,omitempty"`
}

// Activity is one entry of an account's audit trail (sign-ins, keys
// created and revoked, limits changed).
type Activity struct {
	AccountID string    `json:"account_id"`
	At        time.Time `json:"at"`
	Member    string    `json:"member"` // the member's email, or "operator"
	Action    string    `json:"action"`
	Detail    string    `json:"detail,omitempty"`
}

// RunSummary is a run without its records, for listings.
type RunSummary struct {
	ID          string         `json:"id"`
	Kind        string         `json:"kind,omitempty"`
	Status      string         `json:"status"`
	Platform    string         `json:"platform,omitempty"`
	Service     string         `json:"service,omitempty"`
	ServedBy    string         `json:"served_by,omitempty"`
	KeyID       string         `json:"key_id,omitempty"`
	CreditsUsed credits.Micros `json:"credits_used"`
	Records     int            `json:"records"` // pagination.returned
	CreatedAt   time.Time      `json:"created_at"`
}

// RunFilter narrows ListRuns; zero fields do not filter. Limit 0 means
// DefaultRunLimit.
type RunFilter struct {
	// Platform and Service narrow to one service: a service name such as
	// profile.info exists on several platforms.
	Platform string
	Service  string
	Status   string
	Since    time.Time // CreatedAt >= Since
	Until    time.Time // CreatedAt < Until
	Limit    int
}

// DefaultRunLimit is the number of runs ListRuns returns without a Limit.
const DefaultRunLimit = 100

// Members is the dashboard's persistence: members, invites, sessions, the
// activity trail. Every Store implements it (the run listing is in Runs).
type Members interface {
	// CreateInvite stores an invite (ErrNotFound if the account is absent,
	// ErrExists if a member already has the email).
	CreateInvite(ctx context.Context, inv Invite) error
	// AcceptInvite consumes an unexpired invite once and creates its
	// member with the given id and password hash. ErrNotFound for an
	// unknown, used or expired token; ErrExists if the email became a
	// member meanwhile.
	AcceptInvite(ctx context.Context, tokenHash [32]byte, m Member, now time.Time) (Member, error)
	// FindInvite returns an unexpired, unused invite without consuming it
	// (ErrNotFound otherwise), so a form can refuse a bad token before it
	// spends a password hash.
	FindInvite(ctx context.Context, tokenHash [32]byte, now time.Time) (Invite, error)
	// MemberByEmail finds a member by email (case-insensitive).
	MemberByEmail(ctx context.Context, email string) (Member, error)
	// GetMember returns a member by id.
	GetMember(ctx context.Context, id string) (Member, error)
	// SetPassword replaces a member's password hash.
	SetPassword(ctx context.Context, memberID, hash string) error

	// CreateSession stores a session.
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns a session by id, ErrNotFound if absent or past
	// its ExpiresAt at now.
	GetSession(ctx context.Context, id string, now time.Time) (Session, error)
	// TouchSession sets a session's LastSeen.
	TouchSession(ctx context.Context, id string, at time.Time) error
	// ListSessions returns a member's unexpired sessions, newest first.
	ListSessions(ctx context.Context, memberID string, now time.Time) ([]Session, error)
	// DeleteSession removes a session; removing an absent one is no error.
	DeleteSession(ctx context.Context, id string) error

	// AddActivity appends to an account's activity trail.
	AddActivity(ctx context.Context, a Activity) error
	// ListActivity returns an account's latest entries, newest first.
	ListActivity(ctx context.Context, accountID string, limit int) ([]Activity, error)
}
