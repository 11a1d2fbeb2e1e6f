package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/store"
)

// The OAuth authorize step (package oauth checks the request and issues
// the code): a member signs in with the dashboard's sign-in, then a
// consent page names the client and where it sends the browser back, and
// lets the member cap what the grant may spend per day.

type consentData struct {
	Request *oauth.AuthRequest
	CSRF    string
	Member  string
	Limit   string
	Error   string
}

// ServeAuthorize serves GET and POST /oauth/authorize, outside the
// dashboard's path but with its session, pages and protections.
func (h *Handler) ServeAuthorize(w http.ResponseWriter, r *http.Request) {
	h.authorize.ServeHTTP(w, r)
}

func (h *Handler) authorizeHandler() http.Handler {
	return h.crossOrigin(securityHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.OAuth == nil {
			h.notFound(w, r, nil)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			h.consentPage(w, r)
		case http.MethodPost:
			h.consent(w, r)
		default:
			w.Header().Set("Allow", "GET, POST")
			h.renderError(w, r, http.StatusMethodNotAllowed, "Method not allowed", "Use GET or POST.")
		}
	})))
}

// authorizeRequest checks the request's parameters; false when it already
// answered (a 400 page, or the error sent to the client's redirect URI).
func (h *Handler) authorizeRequest(w http.ResponseWriter, r *http.Request, v url.Values) (*oauth.AuthRequest, bool) {
	a, err := h.OAuth.ParseAuthorize(r.Context(), r, v)
	var ae *oauth.AuthError
	switch {
	case err == nil:
		return a, true
	case errors.As(err, &ae) && ae.Redirect:
		http.Redirect(w, r, oauth.ErrorURL(a, ae), http.StatusSeeOther)
	case errors.As(err, &ae):
		h.renderError(w, r, http.StatusBadRequest, "Sign-in request refused", "The application asked to sign in with a request that cannot be honoured: "+ae.Description+".")
	default:
		h.failed(w, r, nil, "reading the application", err)
	}
	return nil, false
}

// consentPage serves GET /oauth/authorize: sign-in first, then consent.
func (h *Handler) consentPage(w http.ResponseWriter, r *http.Request) {
	a, ok := h.authorizeRequest(w, r, r.URL.Query())
	if !ok {
		return
	}
	s, err := h.currentSession(r)
	if errors.Is(err, store.ErrNotFound) {
		http.Redirect(w, r, h.link("signin")+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	if err != nil {
		h.failed(w, r, nil, "reading session", err)
		return
	}
	h.showConsent(w, r, s, a, http.StatusOK, "", "")
}

// showConsent renders the consent page. The page is rendered as a public
// one (no navigation, no sign-out form), so its one form is the consent;
// its form may post, and be redirected, to the client's redirect URI.
func (h *Handler) showConsent(w http.ResponseWriter, r *http.Request, s *Session, a *oauth.AuthRequest, status int, limit, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	if src := oauth.FormActionSource(a.RedirectURI); src != "" {
		csp := w.Header().Get("Content-Security-Policy")
		w.Header().Set("Content-Security-Policy", strings.Replace(csp, "form-action 'self'", "form-action 'self' "+src, 1))
	}
	h.render(w, status, "consent", nil, view{Title: "Allow " + a.Client.Name + "?", Data: consentData{
		Request: a, CSRF: csrfToken(s), Member: s.Member.Email, Limit: limit, Error: msg,
	}})
}

// consent serves POST /oauth/authorize: the member's decision.
func (h *Handler) consent(w http.ResponseWriter, r *http.Request) {
	s, err := h.currentSession(r)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.failed(w, r, nil, "reading session", err)
			return
		}
		h.renderError(w, r, http.StatusUnauthorized, "Signed out", "Your session ended. Start the sign-in from the application again.")
		return
	}
	if err := parseForm(w, r); err != nil {
		h.renderError(w, r, http.StatusBadRequest, "Bad request", err.Error())
		return
	}
	if !checkCSRF(r, s) {
		h.renderError(w, r, http.StatusForbidden, "Form expired", "This form was not issued to your session. Start the sign-in from the application again.")
		return
	}
	a, ok := h.authorizeRequest(w, r, r.PostForm)
	if !ok {
		return
	}
	switch r.PostFormValue("decision") {
	case "allow":
	case "deny":
		h.record(r.Context(), s, "oauth_denied", a.Client.Name)
		http.Redirect(w, r, oauth.Deny(a), http.StatusSeeOther)
		return
	default:
		h.renderError(w, r, http.StatusBadRequest, "Bad request", "Choose Allow or Deny.")
		return
	}
	amount := strings.TrimSpace(r.PostFormValue("credit_limit"))
	var limit *store.CreditLimit
	if amount != "" {
		c, err := parseCredits(amount)
		if err == nil {
			limit = &store.CreditLimit{Period: store.PeriodDay, Credits: c}
			err = limit.Validate()
		}
		if err != nil {
			h.showConsent(w, r, s, a, http.StatusBadRequest, amount, fmt.Sprintf("credit limit: %v", err))
			return
		}
	}
	to, err := h.OAuth.Approve(r.Context(), a, s.liveAccount(), limit)
	if err != nil {
		h.failed(w, r, s, "granting access", err)
		return
	}
	h.record(r.Context(), s, "oauth_granted", fmt.Sprintf("%s (%s)%s", a.Client.Name, a.RedirectHost(), limitText(limit)))
	http.Redirect(w, r, to, http.StatusSeeOther)
}
