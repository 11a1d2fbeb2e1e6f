package caddymodule

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestSDRAdminCommands runs the account and key commands against a fake
// admin endpoint: what each sends (method, path, body), and which
// arguments are refused before anything is sent.
func TestSDRAdminCommands(t *testing.T) {
	type sent struct{ method, path, body string }
	var got []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, sent{r.Method, r.URL.EscapedPath(), string(b)})
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	tests := []struct {
		name    string
		args    []string
		want    *sent  // nil: nothing sent
		wantErr string // "" : success
	}{
		{"create", []string{"account", "create", "acme", "--balance", "10"}, &sent{"POST", "/sdr/accounts", `{"balance":10,"id":"acme"}`}, ""},
		{"create default balance", []string{"account", "create", "acme"}, &sent{"POST", "/sdr/accounts", `{"balance":0,"id":"acme"}`}, ""},
		{"create exponent balance", []string{"account", "create", "acme", "--balance", "1e-6"}, &sent{"POST", "/sdr/accounts", `{"balance":0.000001,"id":"acme"}`}, ""},
		{"create balance injection", []string{"account", "create", "acme", "--balance", `1,"id":"evil"`}, nil, "--balance: "},
		{"create balance not a number", []string{"account", "create", "acme", "--balance", "abc"}, nil, `--balance: "abc" is not a number`},
		{"create balance 7 decimals", []string{"account", "create", "acme", "--balance", "1.1234567"}, nil, "more than six decimals"},
		{"create quoted id", []string{"account", "create", `a"b`}, &sent{"POST", "/sdr/accounts", `{"balance":0,"id":"a\"b"}`}, ""},
		{"show", []string{"account", "show", "acme"}, &sent{"GET", "/sdr/accounts/acme", ""}, ""},
		{"show escapes the id", []string{"account", "show", "a?b"}, &sent{"GET", "/sdr/accounts/a%3Fb", ""}, ""},
		{"credit", []string{"account", "credit", "acme", "5"}, &sent{"POST", "/sdr/accounts/acme/credits", `{"amount":5}`}, ""},
		{"credit negative after --", []string{"account", "credit", "acme", "--", "-0.25"}, &sent{"POST", "/sdr/accounts/acme/credits", `{"amount":-0.25}`}, ""},
		{"credit negative without --", []string{"account", "credit", "acme", "-5"}, nil, "put the amount after --"},
		{"credit with a reason", []string{"account", "credit", "acme", "5", "--reason", `goodwill "june"`}, &sent{"POST", "/sdr/accounts/acme/credits", `{"amount":5,"reason":"goodwill \"june\""}`}, ""},
		{"ledger", []string{"account", "ledger", "acme", "--limit", "7"}, &sent{"GET", "/sdr/accounts/acme/transactions", ""}, ""},
		{"reset test balance", []string{"account", "reset-test-balance", "acme"}, &sent{"POST", "/sdr/accounts/acme/test-balance/reset", ""}, ""},
		{"reset test balance escapes the id", []string{"account", "reset-test-balance", "a/b"}, &sent{"POST", "/sdr/accounts/a%2Fb/test-balance/reset", ""}, ""},
		{"orphan payments", []string{"payments", "orphans"}, &sent{"GET", "/sdr/payments/orphans", ""}, ""},
		{"credit amount injection", []string{"account", "credit", "acme", `1,"amount":1000`}, nil, "amount: "},
		{"key create", []string{"key", "create", "acme", "--name", "backend", "--limit-period", "day", "--limit-credits", "2"}, &sent{"POST", "/sdr/accounts/acme/keys", `{"credit_limit":{"credits":2,"period":"day"},"name":"backend"}`}, ""},
		{"key create no limit", []string{"key", "create", "acme"}, &sent{"POST", "/sdr/accounts/acme/keys", `{"name":""}`}, ""},
		{"key create bad credits", []string{"key", "create", "acme", "--limit-period", "day", "--limit-credits", "abc"}, nil, `--limit-credits: "abc" is not a number`},
		{"key create half a limit", []string{"key", "create", "acme", "--limit-period", "day"}, nil, "give both --limit-period and --limit-credits"},
		{"key limit", []string{"key", "limit", "key_1", "--period", "week", "--credits", "20"}, &sent{"PATCH", "/sdr/keys/key_1", `{"credit_limit":{"credits":20,"period":"week"}}`}, ""},
		{"key limit clear", []string{"key", "limit", "key_1", "--clear"}, &sent{"PATCH", "/sdr/keys/key_1", `{"credit_limit":null}`}, ""},
		{"key limit clear and set", []string{"key", "limit", "key_1", "--clear", "--period", "week", "--credits", "20"}, nil, "give --clear alone"},
		{"key limit nothing", []string{"key", "limit", "key_1"}, nil, "give --period and --credits, or --clear"},
		{"key limit bad credits", []string{"key", "limit", "key_1", "--period", "week", "--credits", "2x"}, nil, `--credits: "2x" is not a number`},
		{"key revoke", []string{"key", "revoke", "key_1"}, &sent{"DELETE", "/sdr/keys/key_1", ""}, ""},
		{"member invite escapes the id", []string{"member", "invite", "a/b", "x@example.com"}, &sent{"POST", "/sdr/accounts/a%2Fb/members", `{"email":"x@example.com"}`}, ""},
		{"unknown subcommand", []string{"bogus"}, nil, `unknown command "bogus" for "caddy sdr"`},
		{"unknown account subcommand", []string{"account", "delete", "acme"}, nil, `unknown command "delete" for "caddy sdr account"`},
		{"unknown key subcommand", []string{"key", "show", "key_1"}, nil, `unknown command "show" for "caddy sdr key"`},
		{"group alone prints help", []string{"key"}, nil, ""},
		{"services reload", []string{"services", "reload"}, &sent{"POST", "/sdr/registry/reload", ""}, ""},
		{"services reload takes no argument", []string{"services", "reload", "x"}, nil, `unknown command "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			root := &cobra.Command{Use: "caddy", SilenceUsage: true, SilenceErrors: true}
			sdr := &cobra.Command{Use: "sdr"}
			buildSDRCommand(sdr)
			root.AddCommand(sdr)
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append([]string{"sdr", "--address", addr}, tt.args...))
			err := root.Execute()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v\n%s", err, out.String())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("sent %v, want nothing", got)
				}
				return
			}
			if len(got) != 1 || got[0] != *tt.want {
				t.Fatalf("sent %q, want %q", got, *tt.want)
			}
		})
	}
}

// TestServicesReloadRefused: a swap the gateway refuses prints the
// compiler's message, its file:line:column first, and fails.
func TestServicesReloadRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"/srv/services/x.cue:3:7: field not allowed\n(schema: schemas/service.cue:1:1)"}`))
	}))
	defer srv.Close()
	root := &cobra.Command{Use: "caddy", SilenceUsage: true, SilenceErrors: true}
	sdr := &cobra.Command{Use: "sdr"}
	buildSDRCommand(sdr)
	root.AddCommand(sdr)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"sdr", "--address", strings.TrimPrefix(srv.URL, "http://"), "services", "reload"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("error %v", err)
	}
	if first, _, _ := strings.Cut(errOut.String(), "\n"); first != "/srv/services/x.cue:3:7: field not allowed" {
		t.Fatalf("stderr starts %q", first)
	}
}
