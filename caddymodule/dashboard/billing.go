package dashboard

import (
	"context"
	"encoding/csv"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/payments"
	"socialrouter/caddymodule/store"
)

// Billing is what the Billing page uses of money in (payments.Service).
type Billing interface {
	Enabled() bool
	Bounds() (lo, hi credits.Micros)
	Currency() string
	PerUnit() credits.Micros
	MinorFor(c credits.Micros) (int64, error)
	Checkout(ctx context.Context, req payments.CheckoutRequest) (string, error)
	Update(ctx context.Context, accountID string, fn func(*store.BillingSettings) error) (store.BillingSettings, error)
}

// billingRoutes registers the Billing page and its actions.
func (h *Handler) billingRoutes(member func(string, func(http.ResponseWriter, *http.Request, *Session))) {
	member("GET /billing", h.billingPage)
	member("POST /billing/topup", h.topUp)
	member("POST /billing/settings", h.billingSettings)
	member("GET /billing/ledger.csv", h.ledgerCSV)
}

// ledgerPage is how many rows the page lists at a time.
const ledgerPage = 25

type billingData struct {
	Enabled  bool
	Balance  credits.Micros
	Low      bool // the balance is under the customer's threshold
	Settings store.BillingSettings
	Min, Max credits.Micros
	Presets  []credits.Micros
	Currency string
	PerUnit  credits.Micros
	Rows     []store.LedgerEntry
	Next     string // cursor of the next page
	CSRF     string
	Error    string
	Notice   string
}

// billingPage serves GET /billing.
func (h *Handler) billingPage(w http.ResponseWriter, r *http.Request, s *Session) {
	d := billingData{}
	switch r.URL.Query().Get("checkout") {
	case "success":
		d.Notice = "Thank you: your payment is being confirmed. The credits appear here as soon as the card network confirms it, usually within seconds."
	case "cancelled":
		d.Notice = "The payment was cancelled; nothing was charged."
	}
	h.showBilling(w, r, s, http.StatusOK, d)
}

// showBilling renders the page with d's message fields set.
func (h *Handler) showBilling(w http.ResponseWriter, r *http.Request, s *Session, status int, d billingData) {
	if h.Billing == nil {
		h.notFound(w, r, s)
		return
	}
	ctx := r.Context()
	acct, err := h.Store.GetAccount(ctx, s.AccountID)
	if err != nil {
		h.failed(w, r, s, "reading account", err)
		return
	}
	bs, err := h.Store.BillingSettings(ctx, s.AccountID)
	if err != nil {
		h.failed(w, r, s, "reading billing settings", err)
		return
	}
	after, err := store.ParseLedgerCursor(r.URL.Query().Get("cursor"))
	if err != nil {
		h.notFound(w, r, s)
		return
	}
	rows, next, err := store.Page(ctx, h.Store, s.AccountID, after, ledgerPage)
	if err != nil {
		h.failed(w, r, s, "reading the ledger", err)
		return
	}
	d.Enabled, d.Balance, d.Settings, d.Rows, d.Next, d.CSRF = h.Billing.Enabled(), acct.Balance, bs, rows, next.String(), csrfToken(s)
	d.Low = bs.LowThreshold > 0 && acct.Balance < bs.LowThreshold
	if d.Enabled {
		d.Min, d.Max = h.Billing.Bounds()
		d.Currency = strings.ToUpper(h.Billing.Currency())
		d.Presets = presets(d.Min, d.Max)
		d.PerUnit = h.Billing.PerUnit()
	}
	if d.Enabled {
		// Checkout is another origin: the form's redirect goes there.
		w.Header().Set("Content-Security-Policy", strings.Replace(w.Header().Get("Content-Security-Policy"),
			"form-action 'self'", "form-action 'self' https://checkout.stripe.com", 1))
	}
	h.render(w, status, "billing", s, view{Title: "Billing", Nav: "billing", Data: d})
}

// presets are the amounts offered as buttons: the minimum, round steps
// above it, and the maximum.
func presets(lo, hi credits.Micros) []credits.Micros {
	out := []credits.Micros{lo}
	for _, c := range []int64{10, 25, 50, 100, 250, 500, 1000} {
		v := credits.Micros(c * credits.PerCredit)
		if v > lo && v < hi {
			out = append(out, v)
		}
	}
	if hi > lo {
		out = append(out, hi)
	}
	if len(out) > 5 {
		out = append(out[:4], hi)
	}
	return out
}

// billingForm checks a Billing form's csrf input.
func (h *Handler) billingForm(w http.ResponseWriter, r *http.Request, s *Session) bool {
	return h.tokenForm(w, r, s, h.Billing != nil, "Billing")
}

// topUp serves POST /billing/topup: a Checkout Session, and the browser
// sent to it. Nothing is credited here.
func (h *Handler) topUp(w http.ResponseWriter, r *http.Request, s *Session) {
	if !h.billingForm(w, r, s) {
		return
	}
	if !h.Billing.Enabled() {
		h.showBilling(w, r, s, http.StatusConflict, billingData{Error: payments.ErrOff.Error()})
		return
	}
	amount, err := credits.Parse(strings.TrimSpace(r.PostFormValue("amount")))
	var minor int64
	if err == nil {
		minor, err = h.Billing.MinorFor(amount)
	}
	if err != nil {
		lo, hi := h.Billing.Bounds()
		h.showBilling(w, r, s, http.StatusBadRequest, billingData{Error: "Choose an amount from " + lo.String() + " to " + hi.String() + " credits."})
		return
	}
	back := origin(r) + h.Path + "billing?checkout="
	url, err := h.Billing.Checkout(r.Context(), payments.CheckoutRequest{AccountID: s.AccountID, Minor: minor,
		SaveCard: r.PostFormValue("save_card") == "on", SuccessURL: back + "success", CancelURL: back + "cancelled"})
	if err != nil {
		h.Logger.Error("dashboard: creating a checkout session", zap.Error(err))
		h.showBilling(w, r, s, http.StatusBadGateway, billingData{Error: "The payment page could not be opened; try again shortly."})
		return
	}
	h.record(r.Context(), s, "top_up_started", amount.String()+" credits")
	http.Redirect(w, r, url, http.StatusSeeOther)
}

// origin is the scheme and host the browser reached the dashboard at.
func origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// billingSettings serves POST /billing/settings: the low-balance
// threshold and automatic recharge.
func (h *Handler) billingSettings(w http.ResponseWriter, r *http.Request, s *Session) {
	if !h.billingForm(w, r, s) {
		return
	}
	num := func(name string) (credits.Micros, error) {
		v := strings.TrimSpace(r.PostFormValue(name))
		if v == "" {
			return 0, nil
		}
		c, err := credits.Parse(v)
		if err != nil || c < 0 {
			return 0, errors.New(strings.ReplaceAll(name, "_", " ") + " must be a number of credits, 0 or more")
		}
		return c, nil
	}
	low, err1 := num("low_threshold")
	thr, err2 := num("recharge_threshold")
	amt, err3 := num("recharge_amount")
	if err := errors.Join(err1, err2, err3); err != nil {
		h.showBilling(w, r, s, http.StatusBadRequest, billingData{Error: err.Error()})
		return
	}
	auto := r.PostFormValue("auto_recharge") == "on"
	if auto {
		if _, err := h.Billing.MinorFor(amt); err != nil || thr <= 0 {
			lo, hi := h.Billing.Bounds()
			h.showBilling(w, r, s, http.StatusBadRequest, billingData{Error: "Automatic recharge needs a threshold above 0 and an amount from " + lo.String() + " to " + hi.String() + " credits."})
			return
		}
	}
	_, err := h.Billing.Update(r.Context(), s.AccountID, func(bs *store.BillingSettings) error {
		if bs.LowThreshold != low {
			bs.LowNotified = false
		}
		bs.LowThreshold, bs.RechargeThreshold, bs.RechargeAmount = low, thr, amt
		if auto && !bs.AutoRecharge {
			bs.Failures, bs.LastFailure, bs.FailedAt = 0, "", time.Time{} // turned back on: a fresh start
		}
		bs.AutoRecharge = auto && bs.PaymentMethod != ""
		return nil
	})
	if err != nil {
		h.failed(w, r, s, "saving billing settings", err)
		return
	}
	h.record(r.Context(), s, "billing_settings", "low "+low.String()+", recharge "+amt.String()+" under "+thr.String())
	notice := "Saved."
	if auto && !h.Billing.Enabled() {
		notice = "Saved. Top-ups are off on this gateway, so automatic recharge cannot run."
	} else if auto {
		if bs, _ := h.Store.BillingSettings(r.Context(), s.AccountID); !bs.AutoRecharge {
			notice = "Saved. Automatic recharge starts once a card is on file: top up once with “Keep this card for automatic recharge” ticked."
		}
	}
	h.showBilling(w, r, s, http.StatusOK, billingData{Notice: notice})
}

// ledgerCSV serves GET /billing/ledger.csv: the whole ledger.
func (h *Handler) ledgerCSV(w http.ResponseWriter, r *http.Request, s *Session) {
	if h.Billing == nil {
		h.notFound(w, r, s)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="ledger-`+s.AccountID+`.csv"`)
	cw := csv.NewWriter(w)
	cw.Write([]string{"id", "created_at", "kind", "amount", "balance", "reason", "reference", "receipt_url"})
	var after store.LedgerCursor
	for {
		rows, next, err := store.Page(r.Context(), h.Store, s.AccountID, after, 500)
		if err != nil {
			h.Logger.Error("dashboard: exporting the ledger", zap.Error(err))
			return // the file ends short; the status was sent
		}
		for _, e := range rows {
			bal := e.Balance.String()
			if e.Kind == store.LedgerRunCharges {
				bal = ""
			}
			cw.Write([]string{e.ID, e.CreatedAt.UTC().Format(time.RFC3339), e.Kind, e.Amount.String(), bal, csvSafe(e.Reason), e.Reference, e.ReceiptURL})
		}
		if next.At.IsZero() {
			break
		}
		after = next
	}
	cw.Flush()
}

// csvSafe keeps a cell from being read as a formula by a spreadsheet.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@", rune(s[0])) {
		return "'" + s
	}
	return s
}
