package dashboard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"socialrouter/caddymodule/store"
)

// Limits are the attempt limits of the forms that check a password or an
// invitation. Each attempt is counted in the store (store.Throttle) before
// its password hash runs, so parallel guesses cannot slip past the count,
// every node counts the same attempts, and a restart forgets none.
type Limits struct {
	// Email limits sign-ins per email (known or not: the answer must not
	// tell). A good sign-in forgets the email's attempts. Growing delays,
	// not a lock: a member whose email is attacked waits at most Max.
	Email store.ThrottleRule `json:"email,omitzero"`
	// Address limits sign-ins and invitation posts per client address
	// (an IPv6 client per /64, what one host usually holds). A good one
	// gives its attempt back, so only failures use the limit up.
	Address store.ThrottleRule `json:"address,omitzero"`
	// Password limits the checks of the current password on the account
	// page, per member.
	Password store.ThrottleRule `json:"password,omitzero"`
	// PasswordFailures wrong current passwords in a row end the session.
	PasswordFailures int `json:"password_failures,omitempty"`
}

// DefaultLimits: 5 sign-ins per email, then 2 s, 4 s, … up to a minute
// between attempts; 30 attempts per address, then 2 s up to 5 minutes;
// 3 current-password checks, then 2 s up to a minute, and the fifth wrong
// one in a row signs the session out. A key idle for its window is
// forgotten.
var DefaultLimits = Limits{
	Email:            store.ThrottleRule{Free: 5, Base: 2 * time.Second, Max: time.Minute, Window: 15 * time.Minute},
	Address:          store.ThrottleRule{Free: 30, Base: 2 * time.Second, Max: 5 * time.Minute, Window: 15 * time.Minute},
	Password:         store.ThrottleRule{Free: 3, Base: 2 * time.Second, Max: time.Minute, Window: 15 * time.Minute},
	PasswordFailures: 5,
}

// withDefaults fills the zero rules of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	for _, r := range []struct{ dst, def *store.ThrottleRule }{
		{&l.Email, &DefaultLimits.Email}, {&l.Address, &DefaultLimits.Address}, {&l.Password, &DefaultLimits.Password},
	} {
		if *r.dst == (store.ThrottleRule{}) {
			*r.dst = *r.def
		}
	}
	if l.PasswordFailures == 0 {
		l.PasswordFailures = DefaultLimits.PasswordFailures
	}
	return l
}

// throttleKey is a counter's key: the kind and a digest of the value, so
// the store keeps no email or address in clear and every key is short.
func throttleKey(kind, value string) string {
	sum := sha256.Sum256([]byte(value))
	return kind + ":" + hex.EncodeToString(sum[:16])
}

func (h *Handler) emailKey(email string) store.ThrottleKey {
	return store.ThrottleKey{Key: throttleKey("signin-email", email), Rule: h.Limits.Email}
}

func (h *Handler) addressKey(r *http.Request) store.ThrottleKey {
	return store.ThrottleKey{Key: throttleKey("address", addressOf(clientIP(r))), Rule: h.Limits.Address}
}

func (h *Handler) passwordKey(memberID string) store.ThrottleKey {
	return store.ThrottleKey{Key: throttleKey("password", memberID), Rule: h.Limits.Password}
}

// addressOf is what the address limit counts: an IPv4 address, or the
// /64 of an IPv6 one (one host commonly holds a whole /64, so counting
// single addresses would let it rotate through 2^64 of them).
func addressOf(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a.WithZone(""), 64).Masked().String()
}

// errThrottled carries the wait of a refused attempt.
type errThrottled struct{ wait time.Duration }

func (e errThrottled) Error() string {
	return fmt.Sprintf("too many attempts; try again in %s", roundUp(e.wait))
}

// roundUp writes a wait as whole seconds, or whole minutes past two.
func roundUp(d time.Duration) string {
	s := int((d + time.Second - 1) / time.Second)
	if s < 120 {
		return fmt.Sprintf("%d seconds", max(s, 1))
	}
	return fmt.Sprintf("%d minutes", (s+59)/60)
}

// attempt counts an attempt on keys before a password hash: an
// errThrottled if one must wait, or the store's error.
func (h *Handler) attempt(r *http.Request, keys ...store.ThrottleKey) (store.ThrottleResult, error) {
	res, err := h.Store.ThrottleAttempt(r.Context(), h.now(), keys...)
	if err != nil {
		return res, err
	}
	if res.Wait > 0 {
		return res, errThrottled{res.Wait}
	}
	return res, nil
}

// refused answers an attempt the throttle or the hash pool turned away
// with Retry-After and again's page (429 throttled, 503 every hash slot
// busy): the account page's password check, whose member is signed in.
// The anonymous forms shed theirs (shed.go). It reports false for any
// other error, which the caller answers itself.
func refused(w http.ResponseWriter, err error, again func(status int, msg string)) bool {
	status, msg, retry := refusal(err)
	if status == 0 {
		return false
	}
	w.Header().Set("Retry-After", fmt.Sprint(retry))
	again(status, msg)
	return true
}
