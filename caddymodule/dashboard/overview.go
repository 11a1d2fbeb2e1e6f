package dashboard

import (
	"net/http"
	"strconv"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

type overviewData struct {
	Balance           credits.Micros
	Day, Week, Month  credits.Micros
	Requests, Records int64
	By                string // platform or provider
	Spend, RecordsC   chart
	// LowThreshold is set when the balance is under the account's
	// warning threshold (the banner).
	LowThreshold credits.Micros
	// Test: the Test mode switch is on (Balance is the test balance,
	// TestStart what a reset restores). Quick is the first call to
	// make, with a test key and a magic input; API is the API's origin.
	Test      bool
	TestStart credits.Micros
	Quick     *quickStart
	API       string
}

// overview serves GET /: the balance, the spend of the current UTC day,
// ISO week and month, and 30 days of daily spend and records. The numbers
// come from the same daily rollups as GET /v1/account/usage.
func (h *Handler) overview(w http.ResponseWriter, r *http.Request, s *Session) {
	ctx := r.Context()
	acct, err := h.Store.GetAccount(ctx, s.AccountID)
	if err != nil {
		h.failed(w, r, s, "reading account", err)
		return
	}
	now := h.now()
	today := store.PeriodStart(store.PeriodDay, now)
	since := today.AddDate(0, 0, -(chartDays - 1))
	for _, p := range []string{store.PeriodWeek, store.PeriodMonth} {
		if st := store.PeriodStart(p, now); st.Before(since) {
			since = st
		}
	}
	rows, err := h.Store.Usage(ctx, s.AccountID, since)
	if err != nil {
		h.failed(w, r, s, "reading usage", err)
		return
	}
	d := overviewData{Balance: acct.Balance, By: "platform", Test: s.Test, TestStart: testBalanceStart(), API: origin(r)}
	if bs, err := h.Store.BillingSettings(ctx, s.AccountID); !s.Test && err == nil && bs.LowThreshold > 0 && acct.Balance < bs.LowThreshold {
		d.LowThreshold = bs.LowThreshold
	}
	if h.Registry != nil {
		testKeys, _ := h.Store.ListKeys(ctx, testmode.AccountID(s.liveAccount())) // none yet: the quick start says how to make one
		d.Quick = newQuickStart(h.Registry(), testKeys)
	}
	if r.URL.Query().Get("by") == "provider" {
		d.By = "provider"
	}
	for _, row := range rows {
		if !row.Day.Before(today) {
			d.Day += row.Credits
		}
		if !row.Day.Before(store.PeriodStart(store.PeriodWeek, now)) {
			d.Week += row.Credits
		}
		if !row.Day.Before(store.PeriodStart(store.PeriodMonth, now)) {
			d.Month += row.Credits
		}
		if !row.Day.Before(today.AddDate(0, 0, -(chartDays - 1))) {
			d.Requests += row.Requests
			d.Records += row.Records
		}
	}
	group := func(u store.UsageRow) string { return u.Platform }
	if d.By == "provider" {
		group = func(u store.UsageRow) string { return u.Offer }
	}
	d.Spend = dailyChart(rows, today, "Daily spend in credits by "+d.By, group,
		func(u store.UsageRow) float64 { return float64(u.Credits) },
		func(v float64) string { return credits.Micros(v).String() + " credits" },
		yAxis{Title: "credits", Tick: func(v float64) string { return credits.Micros(v).String() }})
	d.RecordsC = dailyChart(rows, today, "Daily records by "+d.By, group,
		func(u store.UsageRow) float64 { return float64(u.Records) },
		recordCount, yAxis{Title: "records", Whole: true, Tick: func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }})
	h.render(w, http.StatusOK, "overview", s, view{Title: "Overview", Nav: "overview", Data: d})
}

// recordCount words a number of records for a chart's legend.
func recordCount(v float64) string {
	if v == 1 {
		return "1 record"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " records"
}
