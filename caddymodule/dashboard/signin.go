package dashboard

import (
	"errors"
	"net/http"
	"net/url"

	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

type signinData struct {
	Email, Next, Error string
}

// signinPage serves GET /signin.
func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	if s, err := h.currentSession(r); err == nil && s != nil {
		http.Redirect(w, r, h.safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	h.render(w, http.StatusOK, "signin", nil, view{Title: "Sign in", Data: signinData{Next: r.URL.Query().Get("next")}})
}

// errBadCredentials is the one answer to a wrong email or a wrong
// password, so the form never tells whether an email has a member.
var errBadCredentials = errors.New("incorrect email or password")

// signin serves POST /signin. The attempt is counted against the email
// and the address before any hash runs (throttle.go); an unknown email
// costs the same argon2id check as a known one; a good password forgets
// the email's attempts and gives its attempt back to the address.
func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	f, err := readSignin(w, r)
	again := func(status int, msg string) {
		h.render(w, status, "signin", nil, view{Title: "Sign in", Data: signinData{Email: f.Email, Next: f.Next, Error: msg}})
	}
	if err != nil {
		again(http.StatusBadRequest, err.Error())
		return
	}
	email, address := h.emailKey(f.Email), h.addressKey(r)
	if _, err := h.attempt(r, email, address); err != nil {
		if !h.shed(w, r, err, h.signinLink(f.Next)) {
			h.failed(w, r, nil, "counting a sign-in attempt", err)
		}
		return
	}
	ctx := r.Context()
	m, err := h.Store.MemberByEmail(ctx, f.Email)
	ok := false
	switch {
	case err == nil:
		ok, err = h.Hashes.Verify(ctx, m.PasswordHash, f.Password)
	case errors.Is(err, store.ErrNotFound):
		err = h.Hashes.VerifyNone(ctx, f.Password)
	}
	if err != nil {
		if !h.shed(w, r, err, h.signinLink(f.Next)) {
			h.failed(w, r, nil, "checking a password", err)
		}
		return
	}
	if !ok {
		again(http.StatusUnauthorized, errBadCredentials.Error())
		return
	}
	if err := h.Store.ThrottleReset(ctx, email.Key); err != nil {
		h.Logger.Warn("forgetting sign-in attempts", zap.Error(err))
	}
	if err := h.Store.ThrottleRelease(ctx, h.now(), address); err != nil {
		h.Logger.Warn("releasing a sign-in attempt", zap.Error(err))
	}
	if err := h.startSession(ctx, w, r, m); err != nil {
		h.failed(w, r, nil, "starting session", err)
		return
	}
	s := &Session{Member: m}
	s.AccountID = m.AccountID
	h.record(ctx, s, "signed_in", "from "+clientIP(r))
	http.Redirect(w, r, h.safeNext(f.Next), http.StatusSeeOther)
}

// signinLink is the sign-in form's address, keeping the page to return
// to (the form checks it again: safeNext).
func (h *Handler) signinLink(next string) string {
	if next == "" {
		return h.link("signin")
	}
	return h.link("signin") + "?next=" + url.QueryEscape(next)
}

// signout serves POST /signout: the session is deleted from the store, so
// the cookie is worthless even if kept.
func (h *Handler) signout(w http.ResponseWriter, r *http.Request, s *Session) {
	if err := h.Store.DeleteSession(r.Context(), s.ID); err != nil {
		h.failed(w, r, s, "signing out", err)
		return
	}
	clearCookie(w, r)
	h.record(r.Context(), s, "signed_out", "")
	http.Redirect(w, r, h.link("signin"), http.StatusSeeOther)
}
