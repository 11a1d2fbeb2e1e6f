package dashboard

import (
	"net/http"

	"go.uber.org/zap"

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
	d.Email, d.Account, d.Sessions, d.Current = s.Member.Email, s.liveAccount(), list, s.ID
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
// password, stores the new hash and signs out every other session. Each
// check is counted against the member before it runs (whoever holds a
// session must not guess at hash speed), and the PasswordFailures-th
// wrong one in a row ends this session.
func (h *Handler) changePassword(w http.ResponseWriter, r *http.Request, s *Session) {
	again := func(status int, msg string) { h.showAccount(w, r, s, status, accountData{Error: msg}) }
	f, err := readPasswordChange(w, r)
	if err != nil {
		again(http.StatusBadRequest, err.Error())
		return
	}
	key := h.passwordKey(s.MemberID)
	res, err := h.attempt(r, key)
	if err != nil {
		if !refused(w, err, again) {
			h.failed(w, r, s, "counting a password check", err)
		}
		return
	}
	ok, err := h.Hashes.Verify(r.Context(), s.Member.PasswordHash, f.Current)
	if err != nil {
		if !refused(w, err, again) {
			h.failed(w, r, s, "checking a password", err)
		}
		return
	}
	if !ok {
		if res.Count >= h.Limits.PasswordFailures {
			h.endAfterFailures(w, r, s)
			return
		}
		again(http.StatusBadRequest, "the current password is not correct")
		return
	}
	if err := h.Store.ThrottleReset(r.Context(), key.Key); err != nil {
		h.Logger.Warn("forgetting password checks", zap.Error(err))
	}
	hash, err := h.Hashes.Hash(r.Context(), f.New)
	if err != nil {
		if !refused(w, err, again) {
			h.failed(w, r, s, "hashing password", err)
		}
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

// endAfterFailures signs the session out after too many wrong current
// passwords: whoever holds it may not be its member. The counter stays,
// so signing in again does not buy more guesses at once.
func (h *Handler) endAfterFailures(w http.ResponseWriter, r *http.Request, s *Session) {
	if err := h.Store.DeleteSession(r.Context(), s.ID); err != nil {
		h.failed(w, r, s, "ending session", err)
		return
	}
	clearCookie(w, r)
	h.record(r.Context(), s, "signed_out", "after too many wrong current passwords")
	h.render(w, http.StatusUnauthorized, "signin", nil, view{Title: "Sign in", Data: signinData{
		Email: s.Member.Email, Error: "Signed out after too many wrong passwords. Sign in again."}})
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
