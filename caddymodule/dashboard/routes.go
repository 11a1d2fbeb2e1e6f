package dashboard

import (
	"io/fs"
	"net/http"
	"strings"
)

// routes lists every route of the dashboard. Patterns are relative to the
// mount point; every state-changing route is a POST behind the cross-site
// check, and every page but sign-in, invite acceptance and the static
// assets requires a signed-in member.
func (h *Handler) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))

	mux.HandleFunc("GET /signin", h.signinPage)
	mux.HandleFunc("POST /signin", h.signin)
	mux.HandleFunc("GET /invite", h.invitePage)
	mux.HandleFunc("GET /invite/{token}", h.legacyInvite)
	mux.HandleFunc("POST /invite", h.acceptInvite)

	member := func(pattern string, fn func(http.ResponseWriter, *http.Request, *Session)) {
		mux.Handle(pattern, h.RequireMember(fn))
	}
	member("POST /signout", h.signout)
	member("GET /{$}", h.overview)
	member("GET /keys", h.keysPage)
	member("POST /keys", h.createKey)
	member("POST /keys/{id}/limit", h.setLimit)
	member("GET /keys/{id}/revoke", h.revokePage)
	member("POST /keys/{id}/revoke", h.revokeKey)
	member("POST /grants/{id}/revoke", h.revokeGrant)
	member("GET /runs", h.runsPage)
	member("GET /runs/{id}", h.runPage)
	member("GET /runs/{id}/download", h.downloadRun)
	member("GET /services", h.servicesPage)
	member("GET /reference", h.referencePage)
	member("GET /openapi.json", h.openapi)
	member("GET /activity", h.activityPage)
	member("GET /account", h.accountPage)
	member("POST /account/password", h.changePassword)
	member("POST /account/sessions/{id}/revoke", h.revokeSession)
	h.webhookRoutes(member)
	h.billingRoutes(member)
	member("POST /mode", h.switchMode)
	member("POST /test-balance/reset", h.resetTestBalance)

	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.notFound(w, r, nil)
	})
	prefix := strings.TrimSuffix(h.Path, "/")
	return http.StripPrefix(prefix, h.crossOrigin(securityHeaders(mux)))
}

// cacheStatic lets browsers keep the embedded assets for a day.
func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		next.ServeHTTP(w, r)
	})
}

// securityHeaders keeps the pages out of frames and off other origins'
// scripts; pages load only their own scripts and styles.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; form-action 'self'")
		next.ServeHTTP(w, r)
	})
}
