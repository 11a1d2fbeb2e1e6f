package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"math/big"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// secretLen is the number of random base62 characters of a key (≈ 238 bits).
const secretLen = 40

// NewKey makes a key "<prefix>_live_<40 base62 chars>" from crypto/rand and
// its stored form (digest and display only; the secret is returned once);
// "<prefix>_test_…" for a test twin's account (testmode.IsTest): a key's
// mode is its account's, fixed at creation.
func NewKey(prefix, accountID, name string, limit *store.CreditLimit, now time.Time) (secret string, k store.Key, err error) {
	word := "_" + testmode.ModeOf(accountID) + "_"
	var b strings.Builder
	b.WriteString(prefix + word)
	max := big.NewInt(int64(len(base62)))
	for range secretLen {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", store.Key{}, err
		}
		b.WriteByte(base62[n.Int64()])
	}
	secret = b.String()
	k = store.Key{
		ID:          "key_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), rand.Reader).String()),
		AccountID:   accountID,
		Name:        name,
		Hash:        sha256.Sum256([]byte(secret)),
		Display:     prefix + word + "…" + secret[len(secret)-4:],
		CreatedAt:   now,
		CreditLimit: limit,
	}
	return secret, k, nil
}
