// Package transfer moves accounts, balances and keys between stores: the
// JSON-lines export format, the idempotent import, and the offline `caddy
// sdr export` and `caddy sdr import` commands.
package transfer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// The export format is JSON lines: first one object per account, then one
// per key, each key after its account and an account's keys in creation
// order, so an import can stream it and keeps ListKeys' order. A key carries
// the SHA-256 digest of its secret, never the secret, which no store holds:
// an imported key authenticates with the secret it was issued with.
//
//	{"kind":"account","id":"acme","balance":12.5,"created_at":"2025-03-12T10:30:15.123456Z"}
//	{"kind":"key","id":"key_…","account":"acme","name":"backend","sha256":"9f86…","display":"sdr_live_…x7Qa",
//	 "created_at":"…","revoked_at":null,"credit_limit":{"period":"day","credits":2}}
//
// Runs, usage rollups and per-key spend are not exported: they are history,
// not state an account needs to go on working.
const (
	kindAccount = "account"
	kindKey     = "key"
)

// accountLine is an account in the export format; balance is a JSON number
// of credits with up to six decimals (exact micro-credits).
type accountLine struct {
	Kind      string         `json:"kind"`
	ID        string         `json:"id"`
	Balance   credits.Micros `json:"balance"`
	CreatedAt time.Time      `json:"created_at"`
}

// keyLine is an API key in the export format.
type keyLine struct {
	Kind        string             `json:"kind"`
	ID          string             `json:"id"`
	Account     string             `json:"account"`
	Name        string             `json:"name"`
	SHA256      string             `json:"sha256"` // hex digest of the secret
	Display     string             `json:"display"`
	CreatedAt   time.Time          `json:"created_at"`
	RevokedAt   *time.Time         `json:"revoked_at"`
	CreditLimit *store.CreditLimit `json:"credit_limit"`
}

func keyToLine(k store.Key) keyLine {
	return keyLine{
		Kind: kindKey, ID: k.ID, Account: k.AccountID, Name: k.Name, SHA256: hex.EncodeToString(k.Hash[:]),
		Display: k.Display, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt, CreditLimit: k.CreditLimit,
	}
}

func (l keyLine) key() (store.Key, error) {
	switch {
	case l.ID == "":
		return store.Key{}, errors.New("no id")
	case l.Account == "":
		return store.Key{}, errors.New("no account")
	case l.Display == "":
		return store.Key{}, errors.New("no display")
	case l.CreatedAt.IsZero():
		return store.Key{}, errors.New("no created_at")
	}
	k := store.Key{
		ID: l.ID, AccountID: l.Account, Name: l.Name, Display: l.Display,
		CreatedAt: l.CreatedAt, RevokedAt: l.RevokedAt, CreditLimit: l.CreditLimit,
	}
	h, err := hex.DecodeString(l.SHA256)
	if err != nil || len(h) != sha256.Size {
		return store.Key{}, fmt.Errorf("sha256 %q is not a hex SHA-256 digest (64 hex digits)", l.SHA256)
	}
	copy(k.Hash[:], h)
	if err := k.CreditLimit.Validate(); err != nil {
		return store.Key{}, err
	}
	return k, nil
}

// exportStats counts what an export wrote.
type exportStats struct{ accounts, keys int }

// exported is the part of the store an export reads.
type exported interface {
	store.Exporter
	store.Keys
}

// imported is the part of the store an import writes.
type imported interface {
	store.Accounts
	store.Keys
}

// exportStore writes every account of s, then every key, as JSON lines.
func exportStore(ctx context.Context, s exported, w io.Writer) (exportStats, error) {
	var st exportStats
	accounts, err := s.ListAccounts(ctx)
	if err != nil {
		return st, err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, a := range accounts {
		if err := enc.Encode(accountLine{Kind: kindAccount, ID: a.ID, Balance: a.Balance, CreatedAt: a.CreatedAt}); err != nil {
			return st, err
		}
		st.accounts++
	}
	for _, a := range accounts {
		keys, err := s.ListKeys(ctx, a.ID)
		if err != nil {
			return st, err
		}
		for _, k := range keys {
			if k.Kind == store.KindOAuth {
				continue // a grant lives by its tokens, which are not exported
			}
			if err := enc.Encode(keyToLine(k)); err != nil {
				return st, err
			}
			st.keys++
		}
	}
	return st, bw.Flush()
}

// importStats counts what an import did with each line.
type importStats struct {
	accounts, keys               int // created
	sameAccounts, sameKeys       int // already there, identical: skipped
	conflicts, invalid, failures int // not imported
}

func (s importStats) problems() int { return s.conflicts + s.invalid + s.failures }

func (s importStats) String() string {
	return fmt.Sprintf("imported %d accounts and %d keys; skipped %d accounts and %d keys already present and identical; "+
		"%d conflicts, %d invalid lines, %d failures",
		s.accounts, s.keys, s.sameAccounts, s.sameKeys, s.conflicts, s.invalid, s.failures)
}

// importStore reads the export format from r into s. It is idempotent: a
// record already present and identical is skipped, one present with other
// values is a conflict, reported on report and left as it is. It goes on
// past bad lines so that one run reports every problem; the returned error
// is non-nil only for a failure to read r or a store failure that makes
// going on pointless (a cancelled context).
func importStore(ctx context.Context, s imported, r io.Reader, report io.Writer) (importStats, error) {
	var st importStats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		problem := func(counter *int, format string, args ...any) {
			*counter++
			fmt.Fprintf(report, "line %d: %s\n", n, fmt.Sprintf(format, args...))
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			problem(&st.invalid, "not a JSON object: %v", err)
			continue
		}
		switch head.Kind {
		case kindAccount:
			var l accountLine
			if err := strictJSON(line, &l); err != nil {
				problem(&st.invalid, "account: %v", err)
				continue
			}
			if l.ID == "" || l.CreatedAt.IsZero() {
				problem(&st.invalid, "account %q: id and created_at are required", l.ID)
				continue
			}
			_, err := s.CreateAccount(ctx, l.ID, l.Balance, l.CreatedAt)
			switch {
			case err == nil:
				st.accounts++
			case errors.Is(err, store.ErrExists):
				have, gerr := s.GetAccount(ctx, l.ID)
				switch {
				case gerr != nil:
					problem(&st.failures, "account %s: %v", l.ID, gerr)
				case have.Balance == l.Balance && sameTime(have.CreatedAt, l.CreatedAt):
					st.sameAccounts++
				default:
					problem(&st.conflicts, "account %s: conflict: present with balance %s created %s, the import has balance %s created %s; left as it is",
						l.ID, have.Balance, stamp(have.CreatedAt), l.Balance, stamp(l.CreatedAt))
				}
			default:
				problem(&st.failures, "account %s: %v", l.ID, err)
			}
		case kindKey:
			var l keyLine
			if err := strictJSON(line, &l); err != nil {
				problem(&st.invalid, "key: %v", err)
				continue
			}
			k, err := l.key()
			if err != nil {
				problem(&st.invalid, "key %q: %v", l.ID, err)
				continue
			}
			err = s.CreateKey(ctx, k)
			switch {
			case err == nil:
				st.keys++
			case errors.Is(err, store.ErrExists):
				// The id or the digest is taken.
				have, gerr := s.GetKey(ctx, k.ID)
				if errors.Is(gerr, store.ErrNotFound) {
					other, herr := s.KeyByHash(ctx, k.Hash)
					if herr != nil {
						problem(&st.failures, "key %s: %v", k.ID, herr)
					} else {
						problem(&st.conflicts, "key %s: conflict: its digest already belongs to key %s of account %s; left as it is",
							k.ID, other.ID, other.AccountID)
					}
					continue
				}
				if gerr != nil {
					problem(&st.failures, "key %s: %v", k.ID, gerr)
					continue
				}
				if diff := keyDiff(have, k); len(diff) > 0 {
					problem(&st.conflicts, "key %s: conflict: present with a different %s; left as it is", k.ID, strings.Join(diff, ", "))
					continue
				}
				st.sameKeys++
			case errors.Is(err, store.ErrNotFound):
				problem(&st.failures, "key %s: account %s is not in the store (nor earlier in the input)", k.ID, k.AccountID)
			default:
				problem(&st.failures, "key %s: %v", k.ID, err)
			}
		default:
			problem(&st.invalid, "unknown kind %q: want %q or %q", head.Kind, kindAccount, kindKey)
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("reading the input: %v", err)
	}
	return st, nil
}

// strictJSON decodes one object, refusing unknown fields (a misspelt field
// would otherwise import as its zero value).
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// sameTime compares times at the stores' precision (UTC microseconds).
func sameTime(a, b time.Time) bool {
	return a.UTC().Truncate(time.Microsecond).Equal(b.UTC().Truncate(time.Microsecond))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// keyDiff names the fields in which two keys differ.
func keyDiff(have, want store.Key) []string {
	var d []string
	if have.AccountID != want.AccountID {
		d = append(d, "account")
	}
	if have.Name != want.Name {
		d = append(d, "name")
	}
	if have.Hash != want.Hash {
		d = append(d, "sha256")
	}
	if have.Display != want.Display {
		d = append(d, "display")
	}
	if !sameTime(have.CreatedAt, want.CreatedAt) {
		d = append(d, "created_at")
	}
	if (have.RevokedAt == nil) != (want.RevokedAt == nil) ||
		(have.RevokedAt != nil && !sameTime(*have.RevokedAt, *want.RevokedAt)) {
		d = append(d, "revoked_at")
	}
	if (have.CreditLimit == nil) != (want.CreditLimit == nil) ||
		(have.CreditLimit != nil && *have.CreditLimit != *want.CreditLimit) {
		d = append(d, "credit_limit")
	}
	return d
}
