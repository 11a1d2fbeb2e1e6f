package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"

	"github.com/oklog/ulid/v2"

	"socialrouter/caddymodule/store"
)

type inviteData struct {
	Token, Error string
}

// invitePage serves GET /invite/{token}: the form to choose a password.
// The token is checked when the form is posted (a GET changes nothing).
func (h *Handler) invitePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	h.render(w, http.StatusOK, "invite", nil, view{Title: "Accept your invitation", Data: inviteData{Token: r.PathValue("token")}})
}

// acceptInvite serves POST /invite/{token}: consumes the invite, creates
// the member with the chosen password and signs them in.
func (h *Handler) acceptInvite(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	again := func(status int, msg string) {
		h.render(w, status, "invite", nil, view{Title: "Accept your invitation", Data: inviteData{Token: token, Error: msg}})
	}
	if err := parseForm(w, r); err != nil {
		again(http.StatusBadRequest, err.Error())
		return
	}
	pw, err := readNewPassword(r)
	if err != nil {
		again(http.StatusBadRequest, err.Error())
		return
	}
	hash, err := hashPassword(pw)
	if err != nil {
		h.failed(w, r, nil, "hashing password", err)
		return
	}
	now := h.now()
	id := "mem_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), rand.Reader).String())
	m, err := h.Store.AcceptInvite(r.Context(), sha256.Sum256([]byte(token)), store.Member{ID: id, PasswordHash: hash}, now)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.renderError(w, r, http.StatusNotFound, "Invitation not valid",
			"This invitation link is unknown, was already used or has expired. Ask your operator for a new one.")
		return
	case errors.Is(err, store.ErrExists):
		h.renderError(w, r, http.StatusConflict, "Already a member", "A member with this email already exists: sign in instead.")
		return
	case err != nil:
		h.failed(w, r, nil, "accepting invite", err)
		return
	}
	if err := h.startSession(r.Context(), w, r, m); err != nil {
		h.failed(w, r, nil, "starting session", err)
		return
	}
	s := &Session{Member: m}
	s.AccountID = m.AccountID
	h.record(r.Context(), s, "member_joined", m.Email)
	http.Redirect(w, r, h.Path, http.StatusSeeOther)
}
