package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"net/mail"
	"strings"
	"time"

	"socialrouter/caddymodule/store"
)

// InviteLifetime is how long a dashboard invitation link works; it works
// once.
const InviteLifetime = 72 * time.Hour

// inviteMember serves POST /sdr/accounts/{id}/members {"email": …}: a
// one-time invitation to the account's dashboard. The token is in this one
// answer only (the store keeps its SHA-256); the member opens
// <dashboard>/invite#<token> (the token in the fragment, which browsers
// never send, so no access log holds it) and chooses a password.
func (h *Handler) inviteMember(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var body struct {
		Email string `json:"email"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	email := strings.ToLower(strings.TrimSpace(body.Email))
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > 254 {
		return apiErr(http.StatusBadRequest, "email: %q is not an email address", body.Email)
	}
	now := time.Now().UTC()
	token := rand.Text()
	inv := store.Invite{TokenHash: sha256.Sum256([]byte(token)), AccountID: id, Email: email, CreatedAt: now, ExpiresAt: now.Add(InviteLifetime)}
	if err := h.Store.CreateInvite(r.Context(), inv); err != nil {
		return storeErr(err, "account "+id+" or member "+email)
	}
	return writeJSON(w, http.StatusCreated, map[string]any{
		"account_id": id, "email": email, "token": token, "expires_at": inv.ExpiresAt,
		"path": "invite#" + token, // under the dashboard's path, /dashboard/ by default
	})
}
