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

// TestSDRWebhookCommands: what each `caddy sdr webhook` command sends to
// the admin endpoint, and what it refuses before sending.
func TestSDRWebhookCommands(t *testing.T) {
	type sent struct{ method, path, body string }
	var got []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, sent{r.Method, r.URL.RequestURI(), string(b)})
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		name    string
		args    []string
		want    *sent
		wantErr string
	}{
		{"create", []string{"create", "acme", "https://h.example/x", "--events", "run.completed,run.failed"},
			&sent{"POST", "/sdr/accounts/acme/webhooks", `{"events":["run.completed","run.failed"],"mode":"live","url":"https://h.example/x"}`}, ""},
		{"create default events", []string{"create", "acme", "https://h.example/x"},
			&sent{"POST", "/sdr/accounts/acme/webhooks", `{"events":["run.completed","run.failed","run.cancelled","balance.low","billing.recharge_failed"],"mode":"live","url":"https://h.example/x"}`}, ""},
		{"create escapes the account", []string{"create", "a/b", "https://h.example/x", "--events", "run.failed"},
			&sent{"POST", "/sdr/accounts/a%2Fb/webhooks", `{"events":["run.failed"],"mode":"live","url":"https://h.example/x"}`}, ""},
		{"create no url", []string{"create", "acme"}, nil, "accepts 2 arg(s)"},
		{"create test mode", []string{"create", "acme", "https://h.example/x", "--events", "run.failed", "--mode", "test"},
			&sent{"POST", "/sdr/accounts/acme/webhooks", `{"events":["run.failed"],"mode":"test","url":"https://h.example/x"}`}, ""},
		{"create bad mode", []string{"create", "acme", "https://h.example/x", "--mode", "prod"}, nil, `--mode: "prod" is neither live nor test`},
		{"list", []string{"list", "acme"}, &sent{"GET", "/sdr/accounts/acme/webhooks?mode=live", ""}, ""},
		{"list test mode", []string{"list", "acme", "--mode", "test"}, &sent{"GET", "/sdr/accounts/acme/webhooks?mode=test", ""}, ""},
		{"list bad mode", []string{"list", "acme", "--mode", ""}, nil, `--mode: "" is neither live nor test`},
		{"delete", []string{"delete", "wh_1"}, &sent{"DELETE", "/sdr/webhooks/wh_1", ""}, ""},
		{"rotate", []string{"rotate", "wh_1"}, &sent{"POST", "/sdr/webhooks/wh_1/rotate", ""}, ""},
		{"test", []string{"test", "wh_1"}, &sent{"POST", "/sdr/webhooks/wh_1/test", ""}, ""},
		{"deliveries", []string{"deliveries", "wh_1", "--limit", "5"}, &sent{"GET", "/sdr/webhooks/wh_1/deliveries?limit=5", ""}, ""},
		{"resend", []string{"resend", "msg_1"}, &sent{"POST", "/sdr/deliveries/msg_1/resend", ""}, ""},
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
			root.SetArgs(append([]string{"sdr", "--address", addr, "webhook"}, tt.args...))
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
