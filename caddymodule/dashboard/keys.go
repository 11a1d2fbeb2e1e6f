package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"socialrouter/caddymodule/admin"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// lastUsedRuns is how many of the account's latest runs the keys page
// reads to show each key's last use: derived from runs, so authenticating
// an API call never writes to the store. A key whose latest run is older
// shows "not recently".
const lastUsedRuns = 1000

type keyRow struct {
	store.Key
	Period   string // the limit's period, or month without a limit
	Spent    credits.Micros
	LastUsed *time.Time
}

type keysData struct {
	Keys    []keyRow
	Grants  []keyRow // OAuth grants: keys of kind oauth, each an MCP client's access
	CSRF    string
	Periods []string
	Created string // the secret of a key just created, shown once
	Error   string
	Name    string
}

// keyRows lists the account's keys with their current spend and last use.
func (h *Handler) keyRows(r *http.Request, s *Session) ([]keyRow, error) {
	ctx := r.Context()
	keys, err := h.Store.ListKeys(ctx, s.AccountID)
	if err != nil {
		return nil, err
	}
	recent, err := h.Store.ListRuns(ctx, s.AccountID, store.RunFilter{Limit: lastUsedRuns})
	if err != nil {
		return nil, err
	}
	last := map[string]time.Time{}
	for _, run := range recent {
		if _, ok := last[run.KeyID]; !ok {
			last[run.KeyID] = run.CreatedAt
		}
	}
	now := h.now()
	rows := make([]keyRow, 0, len(keys))
	for i := len(keys) - 1; i >= 0; i-- { // newest first
		k := keys[i]
		row := keyRow{Key: k, Period: store.PeriodMonth}
		if k.CreditLimit != nil {
			row.Period = k.CreditLimit.Period
		}
		if row.Spent, err = h.Store.KeySpend(ctx, k.ID, row.Period, now); err != nil {
			return nil, err
		}
		if t, ok := last[k.ID]; ok {
			row.LastUsed = &t
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// showKeys renders the keys page with status and extra state.
func (h *Handler) showKeys(w http.ResponseWriter, r *http.Request, s *Session, status int, d keysData) {
	rows, err := h.keyRows(r, s)
	if err != nil {
		h.failed(w, r, s, "listing keys", err)
		return
	}
	for _, row := range rows {
		if row.Kind == store.KindOAuth {
			d.Grants = append(d.Grants, row)
		} else {
			d.Keys = append(d.Keys, row)
		}
	}
	d.Periods, d.CSRF = store.Periods, csrfToken(s)
	h.render(w, status, "keys", s, view{Title: "API keys", Nav: "keys", Data: d})
}

// keysPage serves GET /keys.
func (h *Handler) keysPage(w http.ResponseWriter, r *http.Request, s *Session) {
	h.showKeys(w, r, s, http.StatusOK, keysData{})
}

// createKey serves POST /keys: the secret is in this one answer (not
// stored, not cacheable) and never again.
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, s *Session) {
	f, err := readKey(w, r)
	if err != nil {
		h.showKeys(w, r, s, http.StatusBadRequest, keysData{Error: err.Error(), Name: f.Name})
		return
	}
	secret, k, err := admin.NewKey(h.KeyPrefix, s.AccountID, f.Name, f.Limit, h.now())
	if err != nil {
		h.failed(w, r, s, "making key", err)
		return
	}
	if err := h.Store.CreateKey(r.Context(), k); err != nil {
		h.failed(w, r, s, "creating key", err)
		return
	}
	h.record(r.Context(), s, "key_created", fmt.Sprintf("%s (%s)%s", k.Name, k.Display, limitText(k.CreditLimit)))
	h.showKeys(w, r, s, http.StatusCreated, keysData{Created: secret})
}

// ownKey returns an API key of the member's account; another account's
// key, and a grant, are not found, as a missing one.
func (h *Handler) ownKey(r *http.Request, s *Session) (store.Key, error) {
	return h.own(r, s, "")
}

// own returns a key of the given kind of the member's account.
func (h *Handler) own(r *http.Request, s *Session, kind string) (store.Key, error) {
	k, err := h.Store.GetKey(r.Context(), r.PathValue("id"))
	if err == nil && (k.AccountID != s.AccountID || k.Kind != kind) {
		err = store.ErrNotFound
	}
	return k, err
}

// revokeGrant serves POST /grants/{id}/revoke: the MCP client's next call
// with its access token answers 401, and its refresh token is refused.
func (h *Handler) revokeGrant(w http.ResponseWriter, r *http.Request, s *Session) {
	g, err := h.own(r, s, store.KindOAuth)
	if err != nil {
		h.keyError(w, r, s, err)
		return
	}
	if err := parseForm(w, r); err != nil || !checkCSRF(r, s) {
		h.renderError(w, r, http.StatusForbidden, "Form expired", "This form was not issued to your session. Reload the keys page and try again.")
		return
	}
	if _, err := h.Store.RevokeKey(r.Context(), g.ID, h.now()); err != nil {
		h.failed(w, r, s, "revoking access", err)
		return
	}
	if g.RevokedAt == nil {
		h.record(r.Context(), s, "oauth_revoked", g.Name)
	}
	http.Redirect(w, r, h.link("keys"), http.StatusSeeOther)
}

// keyError answers a failed key lookup: 404 for a missing or foreign key.
func (h *Handler) keyError(w http.ResponseWriter, r *http.Request, s *Session, err error) {
	if errors.Is(err, store.ErrNotFound) {
		h.notFound(w, r, s)
		return
	}
	h.failed(w, r, s, "reading key", err)
}

// setLimit serves POST /keys/{id}/limit; empty credits removes the limit.
func (h *Handler) setLimit(w http.ResponseWriter, r *http.Request, s *Session) {
	k, err := h.ownKey(r, s)
	if err != nil {
		h.keyError(w, r, s, err)
		return
	}
	if err := parseForm(w, r); err != nil {
		h.showKeys(w, r, s, http.StatusBadRequest, keysData{Error: err.Error()})
		return
	}
	if k.RevokedAt != nil {
		h.showKeys(w, r, s, http.StatusConflict, keysData{Error: k.Name + " is revoked: it authenticates nothing, so it takes no limit"})
		return
	}
	limit, err := readLimit(r)
	if err != nil {
		h.showKeys(w, r, s, http.StatusBadRequest, keysData{Error: fmt.Sprintf("%s: %v", k.Name, err)})
		return
	}
	if k, err = h.Store.SetKeyLimit(r.Context(), k.ID, limit); err != nil {
		h.failed(w, r, s, "setting limit", err)
		return
	}
	detail := k.Name + ": no limit"
	if limit != nil {
		detail = k.Name + ":" + limitText(limit)
	}
	h.record(r.Context(), s, "limit_changed", detail)
	http.Redirect(w, r, h.link("keys"), http.StatusSeeOther)
}

// revokePage serves GET /keys/{id}/revoke: a confirmation, since a
// revoked key cannot be restored.
func (h *Handler) revokePage(w http.ResponseWriter, r *http.Request, s *Session) {
	k, err := h.ownKey(r, s)
	if err != nil {
		h.keyError(w, r, s, err)
		return
	}
	h.render(w, http.StatusOK, "revoke", s, view{Title: "Revoke key", Nav: "keys", Data: k})
}

// revokeKey serves POST /keys/{id}/revoke; the next API call with the key
// answers 401 revoked_api_key.
func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request, s *Session) {
	k, err := h.ownKey(r, s)
	if err != nil {
		h.keyError(w, r, s, err)
		return
	}
	if _, err := h.Store.RevokeKey(r.Context(), k.ID, h.now()); err != nil {
		h.failed(w, r, s, "revoking key", err)
		return
	}
	if k.RevokedAt == nil {
		h.record(r.Context(), s, "key_revoked", fmt.Sprintf("%s (%s)", k.Name, k.Display))
	}
	http.Redirect(w, r, h.link("keys"), http.StatusSeeOther)
}

func limitText(l *store.CreditLimit) string {
	if l == nil {
		return ""
	}
	return fmt.Sprintf(" %s credits per %s", l.Credits, l.Period)
}
