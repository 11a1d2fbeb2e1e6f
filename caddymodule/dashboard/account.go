package dashboard

import (
	"net/http"

	"socialrouter/caddymodule/store"
)

type accountData struct {
	Email    string
	Account  string
	Sessions []store.Session
	Current  string // the id of this browser's session
	Error    string
	Done     string
}

// showAccount renders the account page (password and sessions).
func (h *Handler) showAccount(w http.ResponseWriter, r *http.Request, s *Session, status int, d accountData) {
	list, err := h.Store.ListSessions(r.Context(), s.MemberID, h.now())
	if err != nil {
		h.failed(w, r, s, "listing sessions", err)
		return
	}
	d.Email, d.Account, d.Sessions, d.Current = s.Member.Email, s.AccountID, list, s.ID
	h.render(w, status, "account", s, view{Title: "Your account", Nav: "account", Data: d})
}

// accountPage serves GET /account.
func (h *Handler) accountPage(w http.ResponseWriter, r *http.Request, s *Session) {
	d := accountData{}
	if r.URL.Query().Get("done") == "password" {
		d.Done = "Password changed. Your other sessions were signed out."
	}
	h.showAccount(w, r, s, http.StatusOK, d)
}

// changePassword serves POST /account/password: checks the current
// password, stores the new hash and signs out every other session.
func (h *Handler) changePassword(w http.ResponseWriter, r *http.Request, s *Session) {
	f, err := readPasswordChange(w, r)
	if err != nil {
		h.showAccount(w, r, s, http.StatusBadRequest, accountData{Error: err.Error()})
		return
	}
	if !checkPassword(s.Member.PasswordHash, f.Current) {
		h.showAccount(w, r, s, http.StatusBadRequest, accountData{Error: "the current password is not correct"})
		return
	}
	hash, err := hashPassword(f.New)
	if err != nil {
		h.failed(w, r, s, "hashing password", err)
		return
	}
	ctx := r.Context()
	if err := h.Store.SetPassword(ctx, s.MemberID, hash); err != nil {
		h.failed(w, r, s, "setting password", err)
		return
	}
	others, err := h.Store.ListSessions(ctx, s.MemberID, h.now())
	if err != nil {
		h.failed(w, r, s, "listing sessions", err)
		return
	}
	for _, o := range others {
		if o.ID != s.ID {
			if err := h.Store.DeleteSession(ctx, o.ID); err != nil {
				h.failed(w, r, s, "ending sessions", err)
				return
			}
		}
	}
	h.record(ctx, s, "password_changed", "")
	http.Redirect(w, r, h.link("account")+"?done=password", http.StatusSeeOther)
}

// revokeSession serves POST /account/sessions/{id}/revoke: ends one of the
// member's own sessions (another member's id is not found).
func (h *Handler) revokeSession(w http.ResponseWriter, r *http.Request, s *Session) {
	id := r.PathValue("id")
	list, err := h.Store.ListSessions(r.Context(), s.MemberID, h.now())
	if err != nil {
		h.failed(w, r, s, "listing sessions", err)
		return
	}
	for _, o := range list {
		if o.ID == id {
			if err := h.Store.DeleteSession(r.Context(), id); err != nil {
				h.failed(w, r, s, "ending session", err)
				return
			}
			h.record(r.Context(), s, "session_revoked", o.UserAgent)
			if id == s.ID {
				clearCookie(w, r)
				http.Redirect(w, r, h.link("signin"), http.StatusSeeOther)
				return
			}
			http.Redirect(w, r, h.link("account"), http.StatusSeeOther)
			return
		}
	}
	h.notFound(w, r, s)
}
