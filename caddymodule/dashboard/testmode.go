package dashboard

import (
	"net/http"
	"strings"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

// modeCookie holds the dashboard's mode: "test" while the Test mode
// switch is on. It selects what the pages show, never what a member may
// do: the session alone signs a member in.
const modeCookie = "sdr_mode"

// testModeOn reports whether the request's dashboard is in test mode.
func testModeOn(r *http.Request) bool {
	c, err := r.Cookie(modeCookie)
	return err == nil && c.Value == testmode.Test
}

// enterMode scopes s to the account the pages show: in test mode the
// account's test twin (created with the starting test balance the first
// time), whose keys, runs, usage, balance and webhooks the pages then list,
// all without a change of their own; else the live account.
func (h *Handler) enterMode(r *http.Request, s *Session) error {
	if !testModeOn(r) {
		return nil
	}
	twin, err := testmode.Ensure(r.Context(), h.Store, s.Member.AccountID, h.now())
	if err != nil {
		return err
	}
	s.AccountID, s.Test = twin.ID, true
	return nil
}

// liveAccount is the member's own account whatever the mode: members,
// sessions, activity and OAuth grants belong to it.
func (s *Session) liveAccount() string { return s.Member.AccountID }

// switchMode serves POST /mode: mode=test turns the Test mode switch on,
// anything else off, and goes back to the page it was posted from.
func (h *Handler) switchMode(w http.ResponseWriter, r *http.Request, s *Session) {
	on := r.PostFormValue("mode") == testmode.Test
	c := &http.Cookie{Name: modeCookie, Path: h.Path, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode}
	if on {
		if _, err := testmode.Ensure(r.Context(), h.Store, s.liveAccount(), h.now()); err != nil {
			h.failed(w, r, s, "creating the test account", err)
			return
		}
		c.Value = testmode.Test
	} else {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
	http.Redirect(w, r, h.safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
}

// resetTestBalance serves POST /test-balance/reset: the test balance goes
// back to testmode.StartBalance. The live balance is another account's.
func (h *Handler) resetTestBalance(w http.ResponseWriter, r *http.Request, s *Session) {
	if _, err := testmode.Reset(r.Context(), h.Store, s.liveAccount(), h.now()); err != nil {
		h.failed(w, r, s, "resetting the test balance", err)
		return
	}
	h.record(r.Context(), s, "test balance reset", "to "+testmode.StartBalance.String()+" credits")
	http.Redirect(w, r, h.Path, http.StatusSeeOther)
}

// quickStart is the overview's first call: a test key and a magic input,
// so a new member sees records and an error path before spending money.
type quickStart struct {
	Endpoint string // POST path of the service
	Field    string // url or query
	Example  string // an input that answers records
	Magic    string // the same service's sdr-test-provider-error input
	Key      string // display of a live test key of the account, "" if none
}

// newQuickStart picks the first callable service with a magic input and
// the account's newest unrevoked test key.
func newQuickStart(reg *registry.Registry, keys []store.Key) *quickStart {
	q := &quickStart{}
	for i := len(keys) - 1; i >= 0; i-- {
		if k := keys[i]; k.RevokedAt == nil && k.Kind == "" && strings.Contains(k.Display, "_test_") {
			q.Key = k.Display
			break
		}
	}
	if reg == nil {
		return nil
	}
	for _, svc := range reg.Services {
		magic, ok := testmode.MagicInput(svc, testmode.ProviderError)
		if !svc.Callable() || !ok {
			continue
		}
		q.Endpoint, q.Field, q.Example, q.Magic = "/v1/extract/"+svc.Key, svc.SingleInputField(), svc.Accepts[0].Example, magic
		return q
	}
	return nil
}

// testBalanceStart words the starting test balance for the pages.
func testBalanceStart() credits.Micros { return testmode.StartBalance }
