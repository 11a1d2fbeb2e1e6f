package badger

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// Key layout of the dashboard's records (upper-case prefixes, apart from
// the gateway's lower-case ones).
const (
	pMember        = 'M' // M memberID → memberRecord
	pEmail         = 'E' // E email → memberID
	pInvite        = 'I' // I token digest → invite (deleted when accepted)
	pSession       = 'X' // X sessionID → session (expires with it)
	pMemberSession = 'Y' // Y memberID NUL sessionID → "" (expires with it)
	pActivity      = 'V' // V account NUL time seq → activity
)

// memberRecord is a member as stored: store.Member leaves the password
// hash out of its JSON form.
type memberRecord struct {
	store.Member
	PasswordHash string `json:"password_hash"`
}

func memberKey(id string) []byte     { return join(pMember, id) }
func emailKey(e string) []byte       { return join(pEmail, strings.ToLower(e)) }
func inviteKey(h [32]byte) []byte    { return append([]byte{pInvite}, h[:]...) }
func sessionKey(id string) []byte    { return join(pSession, id) }
func activityPrefix(a string) []byte { return append(join(pActivity, a), 0) }

func memberSessionKey(member, id string) []byte { return join(pMemberSession, member, id) }

func readMember(txn *bdb.Txn, id string) (store.Member, error) {
	v, err := get(txn, memberKey(id))
	if err != nil {
		return store.Member{}, err
	}
	var r memberRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return store.Member{}, fmt.Errorf("decoding member %s: %v", id, err)
	}
	m := r.Member
	m.PasswordHash = r.PasswordHash
	m.CreatedAt = m.CreatedAt.UTC()
	return m, nil
}

func setJSON(txn *bdb.Txn, key []byte, v any, ttlUntil, now time.Time) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e := bdb.NewEntry(key, b)
	if !ttlUntil.IsZero() {
		e = e.WithTTL(max(ttlUntil.Sub(now), time.Second))
	}
	return txn.SetEntry(e)
}

// CreateInvite stores an invite.
func (s *Store) CreateInvite(ctx context.Context, inv store.Invite) error {
	inv.Email = strings.ToLower(inv.Email)
	inv.CreatedAt, inv.ExpiresAt = settle.Time(inv.CreatedAt), settle.Time(inv.ExpiresAt)
	err := s.update(ctx, func(txn *bdb.Txn) error {
		if ok, err := exists(txn, accountKey(inv.AccountID)); err != nil || !ok {
			if err == nil {
				err = store.ErrNotFound
			}
			return fmt.Errorf("account %s: %w", inv.AccountID, err)
		}
		if ok, err := exists(txn, emailKey(inv.Email)); err != nil || ok {
			if err == nil {
				err = store.ErrExists
			}
			return err
		}
		return setJSON(txn, inviteKey(inv.TokenHash), struct {
			store.Invite
			Hash []byte `json:"hash"`
		}{inv, inv.TokenHash[:]}, time.Time{}, time.Time{})
	})
	if err != nil {
		return fmt.Errorf("creating invite for %s: %w", inv.Email, err)
	}
	return nil
}

// AcceptInvite consumes an invite once and creates its member.
func (s *Store) AcceptInvite(ctx context.Context, tokenHash [32]byte, m store.Member, now time.Time) (store.Member, error) {
	if !settle.ValidID(m.ID) {
		return store.Member{}, fmt.Errorf("accepting invite: invalid member id %q", m.ID)
	}
	err := s.update(ctx, func(txn *bdb.Txn) error {
		v, err := get(txn, inviteKey(tokenHash))
		if err != nil {
			return err
		}
		var inv store.Invite
		if err := json.Unmarshal(v, &inv); err != nil {
			return fmt.Errorf("decoding invite: %v", err)
		}
		if !now.Before(inv.ExpiresAt) {
			return store.ErrNotFound
		}
		if ok, err := exists(txn, emailKey(inv.Email)); err != nil || ok {
			if err == nil {
				err = store.ErrExists
			}
			return err
		}
		m.AccountID, m.Email, m.CreatedAt = inv.AccountID, inv.Email, settle.Time(now)
		if err := setJSON(txn, memberKey(m.ID), memberRecord{m, m.PasswordHash}, time.Time{}, now); err != nil {
			return err
		}
		if err := txn.Set(emailKey(m.Email), []byte(m.ID)); err != nil {
			return err
		}
		return txn.Delete(inviteKey(tokenHash))
	})
	if err != nil {
		return store.Member{}, fmt.Errorf("accepting invite: %w", err)
	}
	return m, nil
}

// FindInvite returns an unexpired, unused invite.
func (s *Store) FindInvite(ctx context.Context, tokenHash [32]byte, now time.Time) (store.Invite, error) {
	var inv store.Invite
	err := s.db.View(func(txn *bdb.Txn) error {
		v, err := get(txn, inviteKey(tokenHash))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(v, &inv); err != nil {
			return fmt.Errorf("decoding invite: %v", err)
		}
		if !now.Before(inv.ExpiresAt) {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return store.Invite{}, fmt.Errorf("finding invite: %w", err)
	}
	inv.TokenHash = tokenHash
	inv.CreatedAt, inv.ExpiresAt = inv.CreatedAt.UTC(), inv.ExpiresAt.UTC()
	return inv, nil
}

// MemberByEmail finds a member by email.
func (s *Store) MemberByEmail(ctx context.Context, email string) (store.Member, error) {
	m, err := viewByIndex(s.db, emailKey(email), readMember)
	if err != nil {
		return store.Member{}, fmt.Errorf("finding member by email: %w", err)
	}
	return m, nil
}

// GetMember returns a member by id.
func (s *Store) GetMember(ctx context.Context, id string) (store.Member, error) {
	m, err := viewByID(s.db, id, readMember)
	if err != nil {
		return store.Member{}, fmt.Errorf("getting member %s: %w", id, err)
	}
	return m, nil
}

// SetPassword replaces a member's password hash.
func (s *Store) SetPassword(ctx context.Context, memberID, hash string) error {
	err := s.update(ctx, func(txn *bdb.Txn) error {
		m, err := readMember(txn, memberID)
		if err != nil {
			return err
		}
		m.PasswordHash = hash
		return setJSON(txn, memberKey(m.ID), memberRecord{m, hash}, time.Time{}, time.Time{})
	})
	if err != nil {
		return fmt.Errorf("setting password of member %s: %w", memberID, err)
	}
	return nil
}

// CreateSession stores a session; badger drops it at its ExpiresAt.
func (s *Store) CreateSession(ctx context.Context, ss store.Session) error {
	ss.CreatedAt, ss.LastSeen, ss.ExpiresAt = settle.Time(ss.CreatedAt), settle.Time(ss.LastSeen), settle.Time(ss.ExpiresAt)
	err := s.update(ctx, func(txn *bdb.Txn) error {
		if err := setJSON(txn, sessionKey(ss.ID), ss, ss.ExpiresAt, ss.CreatedAt); err != nil {
			return err
		}
		return txn.SetEntry(bdb.NewEntry(memberSessionKey(ss.MemberID, ss.ID), nil).
			WithTTL(max(ss.ExpiresAt.Sub(ss.CreatedAt), time.Second)))
	})
	if err != nil {
		return fmt.Errorf("creating session: %w", err)
	}
	return nil
}

func readSession(txn *bdb.Txn, id string, now time.Time) (store.Session, error) {
	v, err := get(txn, sessionKey(id))
	if err != nil {
		return store.Session{}, err
	}
	var ss store.Session
	if err := json.Unmarshal(v, &ss); err != nil {
		return store.Session{}, fmt.Errorf("decoding session: %v", err)
	}
	if !now.Before(ss.ExpiresAt) {
		return store.Session{}, store.ErrNotFound
	}
	ss.CreatedAt, ss.LastSeen, ss.ExpiresAt = ss.CreatedAt.UTC(), ss.LastSeen.UTC(), ss.ExpiresAt.UTC()
	return ss, nil
}

// GetSession returns an unexpired session.
func (s *Store) GetSession(ctx context.Context, id string, now time.Time) (store.Session, error) {
	var ss store.Session
	err := s.db.View(func(txn *bdb.Txn) (err error) {
		ss, err = readSession(txn, id, now)
		return err
	})
	if err != nil {
		return store.Session{}, fmt.Errorf("getting session: %w", err)
	}
	return ss, nil
}

// TouchSession sets a session's LastSeen.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	err := s.update(ctx, func(txn *bdb.Txn) error {
		ss, err := readSession(txn, id, at)
		if err != nil {
			return err
		}
		ss.LastSeen = settle.Time(at)
		return setJSON(txn, sessionKey(id), ss, ss.ExpiresAt, at)
	})
	if err != nil {
		return fmt.Errorf("touching session: %w", err)
	}
	return nil
}

// ListSessions returns a member's unexpired sessions, newest first.
func (s *Store) ListSessions(ctx context.Context, memberID string, now time.Time) ([]store.Session, error) {
	var out []store.Session
	err := s.db.View(func(txn *bdb.Txn) error {
		prefix := append(join(pMemberSession, memberID), 0)
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			id := string(it.Item().Key()[len(prefix):])
			ss, err := readSession(txn, id, now)
			if err == store.ErrNotFound {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, ss)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing sessions of member %s: %w", memberID, err)
	}
	slices.SortFunc(out, func(a, b store.Session) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// DeleteSession removes a session.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.update(ctx, func(txn *bdb.Txn) error {
		ss, err := readSession(txn, id, time.Time{})
		if err == store.ErrNotFound {
			return nil
		}
		if err != nil {
			return err
		}
		if err := txn.Delete(memberSessionKey(ss.MemberID, id)); err != nil {
			return err
		}
		return txn.Delete(sessionKey(id))
	})
	if err != nil {
		return fmt.Errorf("deleting session: %w", err)
	}
	return nil
}

// AddActivity appends to an account's activity trail, keyed by time and
// a sequence so entries of the same microsecond keep their order.
func (s *Store) AddActivity(ctx context.Context, a store.Activity) error {
	a.At = settle.Time(a.At)
	seq, err := s.keySeq.Next()
	if err != nil {
		return fmt.Errorf("adding activity: %v", err)
	}
	k := binary.BigEndian.AppendUint64(activityPrefix(a.AccountID), sortable(a.At.UnixMicro()))
	k = binary.BigEndian.AppendUint64(k, seq)
	err = s.update(ctx, func(txn *bdb.Txn) error { return setJSON(txn, k, a, time.Time{}, time.Time{}) })
	if err != nil {
		return fmt.Errorf("adding activity: %w", err)
	}
	return nil
}

// ListActivity returns an account's latest entries, newest first.
func (s *Store) ListActivity(ctx context.Context, accountID string, limit int) ([]store.Activity, error) {
	var out []store.Activity
	err := s.db.View(func(txn *bdb.Txn) error {
		prefix := activityPrefix(accountID)
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix, Reverse: true, PrefetchValues: true, PrefetchSize: 50})
		defer it.Close()
		for it.Seek(append(append([]byte{}, prefix...), 0xFF)); it.ValidForPrefix(prefix) && len(out) < limit; it.Next() {
			var a store.Activity
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &a) }); err != nil {
				return err
			}
			a.At = a.At.UTC()
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing activity of account %s: %w", accountID, err)
	}
	return out, nil
}
