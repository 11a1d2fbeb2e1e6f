package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// crossOrigin refuses state-changing requests (anything but GET, HEAD and
// OPTIONS) that a browser marks as cross-site (Sec-Fetch-Site) or whose
// Origin is not the Host: Go's http.CrossOriginProtection. Together with
// SameSite=Lax cookies this stops cross-site form posts without tokens in
// the forms.
func (h *Handler) crossOrigin(next http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.renderError(w, r, http.StatusForbidden, "Cross-site request refused",
			"This form was submitted from another site, so it was refused. Reload the page and try again.")
	}))
	return p.Handler(next)
}

// csrfToken is the hidden csrf input of the OAuth consent and grant
// revocation forms: an HMAC of the session's stored id, so only a page
// served to this session can post them. Those forms hand out or take away
// an MCP client's access, so they carry a token on top of the
// cross-site check every form has.
func csrfToken(s *Session) string {
	m := hmac.New(sha256.New, []byte(s.ID))
	m.Write([]byte("sdr dashboard csrf"))
	return hex.EncodeToString(m.Sum(nil))
}

// checkCSRF compares a posted csrf input with the session's token.
func checkCSRF(r *http.Request, s *Session) bool {
	return hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(csrfToken(s)))
}

// tokenForm reads a form that carries the csrf input, of a page that
// exists only when on: 404 when off, 403 "Form expired" (reload the page)
// when the token is not this session's.
func (h *Handler) tokenForm(w http.ResponseWriter, r *http.Request, s *Session, on bool, page string) bool {
	if !on {
		h.notFound(w, r, s)
		return false
	}
	if err := parseForm(w, r); err != nil || !checkCSRF(r, s) {
		h.renderError(w, r, http.StatusForbidden, "Form expired", "This form was not issued to your session. Reload the "+page+" page and try again.")
		return false
	}
	return true
}
