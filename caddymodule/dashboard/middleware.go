package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"

	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/store"
)

// Session is the signed-in member of a request, as RequireMember hands it
// to a handler.
type Session struct {
	store.Session
	Member store.Member
	// Test is set while the Test mode switch is on: AccountID is then the
	// account's test twin (testmode.go).
	Test bool
}

// cookieName is __Host-sdr_session over TLS (the prefix makes the browser
// refuse it unless Secure, host-only and Path=/), sdr_session over plain
// HTTP where browsers refuse Secure cookies.
func cookieName(r *http.Request) string {
	if r.TLS != nil {
		return "__Host-sdr_session"
	}
	return "sdr_session"
}

// sessionID is the stored id of a cookie token: its SHA-256.
func sessionID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// startSession signs a member in: a new session in the store and its
// cookie. The cookie lives no longer than the session's absolute end.
func (h *Handler) startSession(ctx context.Context, w http.ResponseWriter, r *http.Request, m store.Member) error {
	token := rand.Text()
	now := h.now()
	s := store.Session{
		ID: sessionID(token), MemberID: m.ID, AccountID: m.AccountID,
		CreatedAt: now, LastSeen: now, ExpiresAt: now.Add(AbsoluteTimeout),
		UserAgent: truncate(r.UserAgent(), 200), IP: clientIP(r),
	}
	if err := h.Store.CreateSession(ctx, s); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName(r), Value: token, Path: "/", Expires: s.ExpiresAt,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode,
	})
	return nil
}

// clearCookie removes the session cookie from the browser.
func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
}

// currentSession returns the request's live session: present in the store,
// before its absolute end and used within the idle timeout. A live session
// seen more than touchEvery ago is touched.
func (h *Handler) currentSession(r *http.Request) (*Session, error) {
	c, err := r.Cookie(cookieName(r))
	if err != nil || c.Value == "" {
		return nil, store.ErrNotFound
	}
	now := h.now()
	ctx := r.Context()
	s, err := h.Store.GetSession(ctx, sessionID(c.Value), now)
	if err != nil {
		return nil, err
	}
	if now.Sub(s.LastSeen) >= IdleTimeout {
		_ = h.Store.DeleteSession(ctx, s.ID)
		return nil, store.ErrNotFound
	}
	m, err := h.Store.GetMember(ctx, s.MemberID)
	if err != nil {
		return nil, err
	}
	if now.Sub(s.LastSeen) >= touchEvery {
		if err := h.Store.TouchSession(ctx, s.ID, now); err != nil {
			h.Logger.Warn("touching dashboard session", zap.Error(err))
		}
		s.LastSeen = now
	}
	return &Session{Session: s, Member: m}, nil
}

// RequireMember wraps a handler that needs a signed-in member: without a
// live session, a GET is redirected to sign-in with a return path (?next=)
// and anything else answers 401. Reusable by any page that needs a
// member's consent (such as an OAuth consent page).
func (h *Handler) RequireMember(fn func(http.ResponseWriter, *http.Request, *Session)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := h.currentSession(r)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				h.Logger.Error("reading dashboard session", zap.Error(err))
				h.renderError(w, r, http.StatusServiceUnavailable, "Unavailable", "The account store is unavailable; try again shortly.")
				return
			}
			clearCookie(w, r)
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				h.renderError(w, r, http.StatusUnauthorized, "Signed out", "Your session ended. Sign in again.")
				return
			}
			http.Redirect(w, r, h.link("signin")+"?next="+url.QueryEscape(h.Path+strings.TrimPrefix(r.URL.RequestURI(), "/")), http.StatusSeeOther)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if err := h.enterMode(r, s); err != nil {
			h.failed(w, r, s, "opening test mode", err)
			return
		}
		fn(w, r, s)
	})
}

// safeNext returns a return path inside the dashboard (or the OAuth
// authorize step, which sent the member to sign in), or the overview.
func (h *Handler) safeNext(next string) string {
	inside := strings.HasPrefix(next, h.Path) || (h.OAuth != nil && strings.HasPrefix(next, oauth.PathAuthorize+"?"))
	if inside && !strings.HasPrefix(next, "//") && !strings.Contains(next, "\\") && !dotSegment(next) {
		return next
	}
	return h.Path
}

// dotSegment reports whether the path of next has a "." or ".." segment
// (or a backslash), literal or percent-encoded: http.Redirect and browsers
// resolve them, so "/dashboard/../v1/…" would leave the dashboard although
// it starts with its path. A next that does not parse counts as one.
func dotSegment(next string) bool {
	u, err := url.Parse(next)
	if err != nil {
		return true
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return strings.Contains(u.Path, "\\")
}

// clientIP is the address of the request's peer (behind a proxy, put the
// dashboard on a site whose peer is the client, or throttle by proxy).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// record appends to the account's activity trail; a failure is logged,
// not shown, since the action itself succeeded.
func (h *Handler) record(ctx context.Context, s *Session, action, detail string) {
	a := store.Activity{AccountID: s.liveAccount(), At: h.now(), Member: s.Member.Email, Action: action, Detail: detail}
	if err := h.Store.AddActivity(ctx, a); err != nil {
		h.Logger.Error("recording dashboard activity", zap.String("action", action), zap.Error(err))
	}
}
