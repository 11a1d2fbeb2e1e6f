package dashboard

import "net/http"

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
