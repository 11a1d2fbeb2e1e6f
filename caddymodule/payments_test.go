package caddymodule

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"socialrouter/caddymodule/payments"
)

var updatePayments = flag.Bool("update-payments", false, "rewrite testdata/payments.golden.json")

// TestPaymentsAdapt adapts a Caddyfile with a payments block: the app's
// JSON keeps the secrets as the placeholders written (GET /config/ serves
// it), and matches the golden file.
func TestPaymentsAdapt(t *testing.T) {
	t.Setenv("STRIPE_SECRET_KEY", "sk_test_must_not_leak")
	src := `{
	social_router {
		services ../services
		payments stripe {
			secret_key {env.STRIPE_SECRET_KEY}
			webhook_secret {env.STRIPE_WEBHOOK_SECRET}
			currency EUR
			credits_per_unit 2.5
			min_top_up 10
			max_top_up 250.50
			api_base http://127.0.0.1:12111
			webhook_tolerance 2m
			recharge_retry 30m
		}
	}
}
:8080 {
	social_router
}
`
	out, warn, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(src), nil)
	if err != nil {
		t.Fatalf("adapt: %v (%v)", err, warn)
	}
	if strings.Contains(string(out), "sk_test_must_not_leak") {
		t.Fatal("the adapted config holds the secret itself")
	}
	var cfg struct {
		Apps struct {
			SocialRouter struct {
				Payments json.RawMessage `json:"payments"`
			} `json:"social_router"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	var pretty strings.Builder
	var v any
	_ = json.Unmarshal(cfg.Apps.SocialRouter.Payments, &v)
	b, _ := json.MarshalIndent(v, "", "\t")
	pretty.Write(append(b, '\n'))
	golden := "testdata/payments.golden.json"
	if *updatePayments {
		if err := os.WriteFile(golden, []byte(pretty.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with -update-payments)", err)
	}
	if pretty.String() != string(want) {
		t.Errorf("payments JSON:\n%s\nwant (%s):\n%s", pretty.String(), golden, want)
	}
}

// TestPaymentsCaddyfile: the forms the block refuses, and its defaults.
func TestPaymentsCaddyfile(t *testing.T) {
	tests := []struct {
		name, block, err string
		min, max         int64 // resolved, minor units
	}{
		{"defaults", "payments stripe {\n secret_key {env.K}\n}", "", 500, 100000},
		{"yen has no cents", "payments stripe {\n currency JPY\n min_top_up 500\n max_top_up 50000\n}", "", 500, 50000},
		{"unknown provider", "payments paypal {\n}", "unknown provider", 0, 0},
		{"no provider", "payments {\n}", "wrong argument count", 0, 0},
		{"unknown option", "payments stripe {\n colour blue\n}", "unknown payments subdirective", 0, 0},
		{"min above max", "payments stripe {\n min_top_up 50\n max_top_up 10\n}", "must not exceed", 0, 0},
		{"fraction of a cent", "payments stripe {\n min_top_up 5.001\n}", "smallest unit", 0, 0},
		{"negative rate", "payments stripe {\n credits_per_unit -1\n}", "positive number", 0, 0},
		{"bad duration", "payments stripe {\n recharge_retry soon\n}", "positive duration", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := new(App)
			err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser("social_router {\n" + tt.block + "\n}"))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := a.Payments.amounts()
			if err != nil || c.MinTopUp != tt.min || c.MaxTopUp != tt.max {
				t.Errorf("bounds %d..%d (%v), want %d..%d", c.MinTopUp, c.MaxTopUp, err, tt.min, tt.max)
			}
		})
	}
}

// TestPaymentsWebhookOff: without a payments block the provider's route
// is a JSON 404, whatever is posted.
func TestPaymentsWebhookOff(t *testing.T) {
	for _, a := range []*App{{}, {payments: payments.Notices(nil, nil, nil)}} {
		w := httptest.NewRecorder()
		a.servePaymentsWebhook(w, httptest.NewRequest(http.MethodPost, payments.WebhookPath, strings.NewReader(`{"type":"checkout.session.completed"}`)))
		if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "payments are not configured") {
			t.Errorf("answer %d %s, want the JSON 404", w.Code, w.Body)
		}
	}
}
