package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/oklog/ulid/v2"
	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// An invitation link is <dashboard>/invite#<token>: the token rides in the
// fragment, which browsers never send, so no access log or proxy sees it.
// The page's script copies it into the form, whose POST carries it in the
// body; without JavaScript the member pastes it into the form's code field.

type inviteData struct {
	Token, Error string
}

// invitePage serves GET /invite: the form to choose a password. The token
// is checked when the form is posted (a GET changes nothing).
func (h *Handler) invitePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	h.render(w, http.StatusOK, "invite", nil, view{Title: "Accept your invitation", Data: inviteData{}})
}

// legacyInvite serves GET /invite/{token}, the form of links issued
// before the token moved to the fragment: it sends the browser to the
// fragment form (this one request still carried the token in its path).
func (h *Handler) legacyInvite(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, h.link("invite")+"#"+url.PathEscape(r.PathValue("token")), http.StatusSeeOther)
}

// acceptInvite serves POST /invite: counts the attempt against the
// address, looks the token up (before any hash: a guessed token costs a
// store read, not 19 MiB and a core), then hashes the chosen password,
// consumes the invite, creates the member and signs them in.
func (h *Handler) acceptInvite(w http.ResponseWriter, r *http.Request) {
	var token string
	again := func(status int, msg string) {
		h.render(w, status, "invite", nil, view{Title: "Accept your invitation", Data: inviteData{Token: token, Error: msg}})
	}
	if err := parseForm(w, r); err != nil {
		again(http.StatusBadRequest, err.Error())
		return
	}
	token = strings.TrimSpace(strings.TrimPrefix(r.PostFormValue("token"), "#"))
	if token == "" || len(token) > 200 {
		again(http.StatusBadRequest, "enter the invitation code: the part of your link after #")
		return
	}
	address := h.addressKey(r)
	if _, err := h.attempt(r, address); err != nil {
		if !h.shed(w, r, err, h.link("invite")) {
			h.failed(w, r, nil, "counting an invitation attempt", err)
		}
		return
	}
	ctx, now, digest := r.Context(), h.now(), sha256.Sum256([]byte(token))
	if _, err := h.Store.FindInvite(ctx, digest, now); err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.failed(w, r, nil, "finding invite", err)
			return
		}
		h.renderError(w, r, http.StatusNotFound, "Invitation not valid",
			"This invitation link is unknown, was already used or has expired. Ask your operator for a new one.")
		return
	}
	pw, err := readNewPassword(r)
	if err != nil {
		again(http.StatusBadRequest, err.Error())
		return
	}
	hash, err := h.Hashes.Hash(ctx, pw)
	if err != nil {
		if !h.shed(w, r, err, h.link("invite")) {
			h.failed(w, r, nil, "hashing password", err)
		}
		return
	}
	id := "mem_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), rand.Reader).String())
	m, err := h.Store.AcceptInvite(ctx, digest, store.Member{ID: id, PasswordHash: hash}, now)
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
	if err := h.Store.ThrottleRelease(ctx, now, address); err != nil {
		h.Logger.Warn("releasing an invitation attempt", zap.Error(err))
	}
	if err := h.startSession(ctx, w, r, m); err != nil {
		h.failed(w, r, nil, "starting session", err)
		return
	}
	s := &Session{Member: m}
	s.AccountID = m.AccountID
	h.record(ctx, s, "member_joined", m.Email)
	http.Redirect(w, r, h.Path, http.StatusSeeOther)
}
