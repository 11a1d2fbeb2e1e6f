package dashboard

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

//go:embed templates static
var assets embed.FS

// pages are parsed once: each page template with the layout.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		out[base] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", n))
	}
	return out
}()

var funcs = template.FuncMap{
	"credits": func(m credits.Micros) string { return m.String() },
	// thisPeriod words a spend window: "today", "this week"…
	"thisPeriod": func(period string) string {
		if period == store.PeriodDay {
			return "today"
		}
		return "this " + period
	},
	"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"date": func(t time.Time) string { return t.UTC().Format(time.DateOnly) },
	// kindLabel words a ledger row's kind (store.Ledger*).
	"kindLabel": func(kind string) string {
		return map[string]string{store.LedgerOpening: "Opening balance", store.LedgerTopUp: "Top-up by card",
			store.LedgerRecharge: "Automatic recharge", store.LedgerRefund: "Refund", store.LedgerAdjustment: "Adjustment",
			store.LedgerRunCharges: "Runs charged that day"}[kind]
	},
	"json": func(v any) string {
		b, _ := json.MarshalIndent(v, "", "  ")
		return string(b)
	},
	"pretty": func(raw json.RawMessage) string {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") != nil {
			return string(raw)
		}
		return b.String()
	},
	"percent": func(part, whole credits.Micros) int {
		if whole <= 0 {
			return 0
		}
		return int(min(100, part*100/whole))
	},
}

// view is what every page template gets.
type view struct {
	Title  string
	Nav    string // the active nav entry
	Base   string // the dashboard's path, with a trailing slash
	Member string // the signed-in member's email, "" on public pages
	Test   bool   // the Test mode switch is on (testmode.go)
	Data   any
}

// render writes a page with status.
func (h *Handler) render(w http.ResponseWriter, status int, page string, s *Session, v view) {
	t, ok := pages[page]
	if !ok {
		panic("no dashboard page " + page)
	}
	v.Base = h.Path
	if s != nil {
		v.Member, v.Test = s.Member.Email, s.Test
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		h.Logger.Error("rendering dashboard page", zap.String("page", page), zap.Error(err))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// renderError answers with a small error page.
func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	h.render(w, status, "error", nil, view{Title: title, Data: msg})
}

// notFound is the answer for unknown paths and for ids of other accounts
// alike, so an id of another account cannot be told from a missing one.
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request, s *Session) {
	h.render(w, http.StatusNotFound, "error", s, view{Title: "Not found", Data: "There is nothing here."})
}

// failed logs a store error and answers 503.
func (h *Handler) failed(w http.ResponseWriter, r *http.Request, s *Session, what string, err error) {
	h.Logger.Error("dashboard: "+what, zap.Error(err))
	h.render(w, http.StatusServiceUnavailable, "error", s, view{Title: "Unavailable",
		Data: fmt.Sprintf("The account store could not answer (%s); try again shortly.", what)})
}
