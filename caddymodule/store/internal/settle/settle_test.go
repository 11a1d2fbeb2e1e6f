package settle

import (
	"encoding/json"
	"strings"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

func TestPlan(t *testing.T) {
	cases := []struct {
		name        string
		balance     credits.Micros
		price       credits.Micros
		n           int
		wantRecords int
	}{
		{"pays for all", 10_000_000, 1725, 5, 5},
		{"exact", 3 * 1725, 1725, 3, 3},
		{"truncates", 2*1725 + 1724, 1725, 5, 2},
		{"below one record", 1724, 1725, 5, 0},
		{"zero balance", 0, 1725, 5, 0},
		{"negative balance never charges", -5, 1725, 5, 0},
		{"free", 0, 0, 5, 5},
		{"no records", 100, 1, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			records, charged := Plan(tc.balance, tc.price, tc.n)
			if records != tc.wantRecords || charged != credits.Micros(records)*tc.price {
				t.Errorf("Plan(%d, %d, %d) = %d, %d; want %d records", tc.balance, tc.price, tc.n, records, charged, tc.wantRecords)
			}
			if charged > max(tc.balance, 0) && tc.price > 0 {
				t.Errorf("charged %d beyond balance %d", charged, tc.balance)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	run := func(mod func(r *runs.Run)) *runs.Run {
		r := &runs.Run{ID: "ext_1", AccountID: "acme"}
		mod(r)
		return r
	}
	cases := []struct {
		name    string
		s       store.Settlement
		wantErr string
	}{
		{"valid", store.Settlement{Run: run(func(*runs.Run) {}), Price: 1}, ""},
		{"no run", store.Settlement{}, "no run"},
		{"no id", store.Settlement{Run: run(func(r *runs.Run) { r.ID = "" })}, "invalid run id"},
		{"NUL in account", store.Settlement{Run: run(func(r *runs.Run) { r.AccountID = "a\x00b" })}, "invalid account id"},
		{"NUL in key", store.Settlement{Run: run(func(r *runs.Run) { r.KeyID = "k\x00" })}, "invalid key id"},
		{"negative price", store.Settlement{Run: run(func(*runs.Run) {}), Price: -1}, "negative price"},
		{"NUL in offer", store.Settlement{Run: run(func(*runs.Run) {}), Offer: "a\x00"}, "NUL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.s)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Check = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestDocRoundTrip checks the stored form keeps the scope fields the API
// form leaves out, and that truncation is rendered.
func TestDocRoundTrip(t *testing.T) {
	r := &runs.Run{ID: "ext_1", Status: "completed", AccountID: "acme", KeyID: "key_1",
		Data: []json.RawMessage{json.RawMessage(`{"b":1,"a":2}`), json.RawMessage(`{"c":3}`)}}
	p, err := Prepare(store.Settlement{Run: r, Price: 10})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		records  int
		wantData string
	}{{2, `[{"b":1,"a":2},{"c":3}]`}, {1, `[{"b":1,"a":2}]`}, {0, `[]`}}
	for _, tc := range cases {
		doc, err := p.Doc(tc.records, credits.Micros(tc.records)*10)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRun(doc)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(got.Data)
		if got.AccountID != "acme" || got.KeyID != "key_1" || string(data) != tc.wantData ||
			got.CreditsUsed != credits.Micros(tc.records)*10 || got.Pagination.Returned != tc.records {
			t.Errorf("records %d: decoded %+v, data %s", tc.records, got, data)
		}
	}
	if len(r.Data) != 2 {
		t.Errorf("Doc changed the caller's run before Apply")
	}
}

// TestFull: Plan keeps every record at the full cost exactly when the
// payable money covers Full's charge, for one price and for lines; the
// PostgreSQL store's one-trip group settles on this (it sends Full's
// charge and checks, in the server, that the hold and the balance cover
// it).
func TestFull(t *testing.T) {
	data := []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"b":2}`), json.RawMessage(`{"c":3}`)}
	cases := []store.Settlement{
		{Price: 1725},
		{Price: 0},
		{Price: 7, Lines: []store.Line{{Offer: "x", Price: 5}, {Offer: "y", Price: 0}, {Offer: "x", Price: 9}}},
		{Price: 0, Lines: []store.Line{{Offer: "x"}, {Offer: "y"}, {Offer: "z"}}},
	}
	for i, s := range cases {
		s.Run = &runs.Run{ID: "ext_1", AccountID: "acme", Data: data}
		p, err := Prepare(s)
		if err != nil {
			t.Fatal(err)
		}
		records, charged := p.Full()
		if records != len(data) {
			t.Errorf("case %d: Full keeps %d records; want %d", i, records, len(data))
		}
		for _, payable := range []credits.Micros{0, 1, charged - 1, charged, charged + 1, 1 << 40} {
			if payable < 0 {
				continue // a balance and a hold are never below zero
			}
			r, c := p.Plan(payable)
			if full := r == records && c == charged; full != (payable >= charged) {
				t.Errorf("case %d: Plan(%d) = %d, %d; Full = %d, %d", i, payable, r, c, records, charged)
			}
		}
	}
}
