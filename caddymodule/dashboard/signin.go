package dashboard

import (
	"errors"
	"fmt"
	"net/http"

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

// signin serves POST /signin. An unknown email costs the same argon2id
// check as a known one; failures count against the email and the address.
func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	f, err := readSignin(w, r)
	again := func(status int, err error) {
		h.render(w, status, "signin", nil, view{Title: "Sign in", Data: signinData{Email: f.Email, Next: f.Next, Error: err.Error()}})
	}
	if err != nil {
		again(http.StatusBadRequest, err)
		return
	}
	now, ip := h.now(), clientIP(r)
	if until, blocked := h.throttle.blocked(f.Email, ip, now); blocked {
		w.Header().Set("Retry-After", fmt.Sprint(int(until.Sub(now).Seconds())+1))
		again(http.StatusTooManyRequests, fmt.Errorf("too many failed sign-ins; try again in %d minutes", int(until.Sub(now).Minutes())+1))
		return
	}
	m, err := h.Store.MemberByEmail(r.Context(), f.Email)
	hash := m.PasswordHash
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.failed(w, r, nil, "finding member", err)
			return
		}
		hash = dummyHash()
	}
	if !checkPassword(hash, f.Password) || err != nil {
		h.throttle.fail(f.Email, ip, now)
		again(http.StatusUnauthorized, errBadCredentials)
		return
	}
	h.throttle.succeed(f.Email)
	if err := h.startSession(r.Context(), w, r, m); err != nil {
		h.failed(w, r, nil, "starting session", err)
		return
	}
	s := &Session{Member: m}
	s.AccountID = m.AccountID
	h.record(r.Context(), s, "signed_in", "from "+ip)
	http.Redirect(w, r, h.safeNext(f.Next), http.StatusSeeOther)
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
