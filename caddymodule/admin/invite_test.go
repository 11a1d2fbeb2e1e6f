package admin

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

func TestInviteMember(t *testing.T) {
	h, _ := newTestHandler(t)
	if st, body, _ := serve(t, h, "POST", "/sdr/accounts", `{"id": "acme", "balance": 1}`); st != http.StatusCreated {
		t.Fatalf("creating account: %d %s", st, body)
	}
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{"/sdr/accounts/acme/members", `{"email": "not an email"}`, http.StatusBadRequest},
		{"/sdr/accounts/acme/members", `{"email": "Alice <a@example.com>"}`, http.StatusBadRequest},
		{"/sdr/accounts/acme/members", `{"mail": "a@example.com"}`, http.StatusBadRequest},
		{"/sdr/accounts/nobody/members", `{"email": "a@example.com"}`, http.StatusNotFound},
	} {
		if st, body, _ := serve(t, h, "POST", c.path, c.body); st != c.status {
			t.Errorf("POST %s %s: %d %s, want %d", c.path, c.body, st, body, c.status)
		}
	}
	st, body, _ := serve(t, h, "POST", "/sdr/accounts/acme/members", `{"email": " Alice@Example.com "}`)
	if st != http.StatusCreated {
		t.Fatalf("invite: %d %s", st, body)
	}
	var got struct {
		Email, Token, Path string
		ExpiresAt          time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Email != "alice@example.com" || len(got.Token) < 26 || got.Path != "invite#"+got.Token ||
		time.Until(got.ExpiresAt) < InviteLifetime-time.Minute || time.Until(got.ExpiresAt) > InviteLifetime {
		t.Errorf("invite answer %+v", got)
	}
	m, err := h.Store.(store.Members).AcceptInvite(t.Context(), sha256.Sum256([]byte(got.Token)), store.Member{ID: "mem_1", PasswordHash: "h"}, time.Now())
	if err != nil || m.AccountID != "acme" || m.Email != "alice@example.com" {
		t.Fatalf("accepting the invite: %+v, %v", m, err)
	}
	if st, body, _ := serve(t, h, "POST", "/sdr/accounts/acme/members", `{"email": "alice@example.com"}`); st != http.StatusConflict {
		t.Errorf("inviting a member again: %d %s, want 409", st, body)
	}
}
