package payments

import (
	"errors"
	"testing"

	"socialrouter/caddymodule/credits"
)

func svc(t *testing.T, cur string, perUnit credits.Micros, lo, hi int64) *Service {
	t.Helper()
	s, err := New(Config{SecretKey: "sk_test_x", WebhookSecret: "whsec_x", Currency: cur, PerUnit: perUnit, MinTopUp: lo, MaxTopUp: hi})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConversions: what a payment buys, what credits cost, both ways,
// exactly, in a currency with cents and one without.
func TestConversions(t *testing.T) {
	tests := []struct {
		name    string
		cur     string
		perUnit credits.Micros
		minor   int64
		credits credits.Micros
	}{
		{"usd one to one", "usd", credits.PerCredit, 2000, 20 * credits.PerCredit},
		{"usd a cent", "usd", credits.PerCredit, 1, 10_000},
		{"eur 2.5 per unit", "eur", 2_500_000, 1050, 26_250_000},
		{"jpy whole units", "jpy", 10_000, 500, 5 * credits.PerCredit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := svc(t, tt.cur, tt.perUnit, 1, 1<<40)
			if got := s.credits(tt.minor); got != tt.credits {
				t.Errorf("credits(%d) = %s, want %s", tt.minor, got, tt.credits)
			}
			if got := s.minor(tt.credits); got != tt.minor {
				t.Errorf("minor(%s) = %d, want %d", tt.credits, got, tt.minor)
			}
		})
	}
	// A recharge never buys less than asked: credits that cost a fraction
	// of a cent round the price up.
	if got := svc(t, "usd", 3*credits.PerCredit, 1, 1<<40).minor(credits.PerCredit); got != 34 {
		t.Errorf("1 credit at 3 per dollar costs %d cents, want 34", got)
	}
}

// TestMinorFor: a top-up must be within the bounds and a whole number of
// cents.
func TestMinorFor(t *testing.T) {
	s := svc(t, "usd", credits.PerCredit, 500, 50000)
	for _, tt := range []struct {
		credits credits.Micros
		minor   int64
		err     bool
	}{
		{5 * credits.PerCredit, 500, false},
		{500 * credits.PerCredit, 50000, false},
		{4_990_000, 0, true},                      // under the minimum
		{500*credits.PerCredit + 10_000, 0, true}, // over the maximum
		{5_000_001, 0, true},                      // a fraction of a cent
	} {
		got, err := s.MinorFor(tt.credits)
		if (err != nil) != tt.err || got != tt.minor || (err != nil && !errors.Is(err, ErrAmount)) {
			t.Errorf("MinorFor(%s) = %d, %v", tt.credits, got, err)
		}
	}
	if _, err := ToMinor("usd", 5_001_000); err == nil {
		t.Error("ToMinor accepted a tenth of a cent")
	}
}

// TestNew refuses a configuration that cannot take a payment.
func TestNew(t *testing.T) {
	for _, c := range []Config{
		{WebhookSecret: "whsec_x", PerUnit: 1, MinTopUp: 1, MaxTopUp: 2},
		{SecretKey: "sk_x", PerUnit: 1, MinTopUp: 1, MaxTopUp: 2},
		{SecretKey: "sk_x", WebhookSecret: "whsec_x", PerUnit: 1, MinTopUp: 3, MaxTopUp: 2},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted it", c)
		}
	}
	if Notices(nil, nil, nil).Enabled() {
		t.Error("a service without a provider says top-ups are on")
	}
}
