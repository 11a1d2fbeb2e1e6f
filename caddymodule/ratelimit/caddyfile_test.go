package ratelimit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/caddyauth" // basic_auth, to sort against
)

func TestUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    Handler
		wantErr string // substring; empty means success
	}{
		{
			name:  "defaults",
			input: `ip_rate_limit`,
			want:  Handler{},
		},
		{
			name:  "count and window",
			input: `ip_rate_limit 100 60s`,
			want:  Handler{Count: 100, Window: caddy.Duration(time.Minute)},
		},
		{
			name:  "window in days",
			input: `ip_rate_limit 5000 1d`,
			want:  Handler{Count: 5000, Window: caddy.Duration(24 * time.Hour)},
		},
		{
			name: "memory store",
			input: `ip_rate_limit 10 1s {
				store memory
			}`,
			want: Handler{Count: 10, Window: caddy.Duration(time.Second), Store: &StoreConfig{Type: "memory"}},
		},
		{
			name: "everything",
			input: `ip_rate_limit 100 60s {
				store redis redis://:pw@10.0.0.5:6379/2
				fail closed
				timeout 250ms
				policy edge
				prefix sdr_rl_eu
			}`,
			want: Handler{
				Count:      100,
				Window:     caddy.Duration(time.Minute),
				PolicyName: "edge",
				Store: &StoreConfig{
					Type:    "redis",
					URL:     "redis://:pw@10.0.0.5:6379/2",
					Fail:    "closed",
					Prefix:  "sdr_rl_eu",
					Timeout: caddy.Duration(250 * time.Millisecond),
				},
			},
		},
		{
			name: "fail open without store",
			input: `ip_rate_limit 1 1s {
				fail open
			}`,
			want: Handler{Count: 1, Window: caddy.Duration(time.Second), Store: &StoreConfig{Fail: "open"}},
		},
		{
			name: "last store wins",
			input: `ip_rate_limit 1 1s {
				store redis redis://127.0.0.1:6379
				store memory
			}`,
			want: Handler{Count: 1, Window: caddy.Duration(time.Second), Store: &StoreConfig{Type: "memory"}},
		},
		{name: "one argument", input: `ip_rate_limit 100`, wantErr: "wrong argument count"},
		{name: "three arguments", input: `ip_rate_limit 100 60s 5`, wantErr: "wrong argument count"},
		{name: "count not a number", input: `ip_rate_limit lots 60s`, wantErr: `parsing count "lots"`},
		{name: "zero count", input: `ip_rate_limit 0 60s`, wantErr: `parsing count "0"`},
		{name: "negative count", input: `ip_rate_limit -1 60s`, wantErr: `parsing count "-1"`},
		{name: "bad window", input: `ip_rate_limit 100 soon`, wantErr: `parsing window "soon"`},
		{name: "zero window", input: `ip_rate_limit 100 0s`, wantErr: `parsing window "0s"`},
		{name: "store without type", input: "ip_rate_limit {\n store\n}", wantErr: "wrong argument count"},
		{name: "unknown store", input: "ip_rate_limit {\n store etcd\n}", wantErr: `unknown store type "etcd"`},
		{name: "redis without url", input: "ip_rate_limit {\n store redis\n}", wantErr: "missing url"},
		{name: "redis with two urls", input: "ip_rate_limit {\n store redis redis://a redis://b\n}", wantErr: "wrong argument count"},
		{name: "memory with url", input: "ip_rate_limit {\n store memory redis://a\n}", wantErr: "wrong argument count"},
		{name: "unknown fail mode", input: "ip_rate_limit {\n fail sometimes\n}", wantErr: `unknown fail mode "sometimes"`},
		{name: "fail without mode", input: "ip_rate_limit {\n fail\n}", wantErr: "wrong argument count"},
		{name: "bad timeout", input: "ip_rate_limit {\n timeout fast\n}", wantErr: `parsing timeout "fast"`},
		{name: "negative timeout", input: "ip_rate_limit {\n timeout -1s\n}", wantErr: `parsing timeout "-1s"`},
		{name: "policy with two names", input: "ip_rate_limit {\n policy a b\n}", wantErr: "wrong argument count"},
		{name: "prefix without value", input: "ip_rate_limit {\n prefix\n}", wantErr: "wrong argument count"},
		{name: "unknown subdirective", input: "ip_rate_limit {\n burst 5\n}", wantErr: `unrecognized subdirective "burst"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Handler
			err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v %+v\nwant %+v %+v", got, got.Store, tt.want, tt.want.Store)
			}
		})
	}
}

// TestCaddyfileAdapt runs the directive through the Caddyfile adapter:
// it must be known, sorted ahead of the site's other handlers without an
// order option, and produce the JSON shape the docs give.
func TestCaddyfileAdapt(t *testing.T) {
	input := `:8080 {
		respond "ok"
		basic_auth {
			user $2a$14$Zkx19XLiW6VYouLHR5NmfOFU0z2GTNmpkT/5qqR7hx4IjWJPDhjvG
		}
		ip_rate_limit 100 60s {
			store redis redis://127.0.0.1:6379/0
			fail closed
		}
	}`
	adapter := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}
	out, _, err := adapter.Adapt([]byte(input), nil)
	if err != nil {
		t.Fatalf("adapting: %v", err)
	}

	var cfg struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []any `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	var handlers []map[string]any
	for _, srv := range cfg.Apps.HTTP.Servers {
		handlers = append(handlers, flattenHandlers(srv.Routes)...)
	}
	if len(handlers) != 3 {
		t.Fatalf("got %d handlers, want 3:\n%s", len(handlers), out)
	}
	first := handlers[0]
	want := map[string]any{
		"handler": "ip_rate_limit",
		"count":   float64(100),
		"window":  float64(60 * time.Second),
		"store":   map[string]any{"type": "redis", "url": "redis://127.0.0.1:6379/0", "fail": "closed"},
	}
	if !reflect.DeepEqual(first, want) {
		t.Errorf("first handler %v, want %v\nfull config:\n%s", first, want, out)
	}
	if second := handlers[1]; second["handler"] != "authentication" {
		t.Errorf("second handler %v, want basic_auth's authentication handler", second["handler"])
	}
}

// flattenHandlers lists the handlers of routes in order, descending into
// subroutes.
func flattenHandlers(routes []any) []map[string]any {
	var out []map[string]any
	for _, r := range routes {
		route, _ := r.(map[string]any)
		handle, _ := route["handle"].([]any)
		for _, h := range handle {
			m, _ := h.(map[string]any)
			if m["handler"] == "subroute" {
				sub, _ := m["routes"].([]any)
				out = append(out, flattenHandlers(sub)...)
				continue
			}
			out = append(out, m)
		}
	}
	return out
}

func TestParseCaddyfileHelper(t *testing.T) {
	h := httpcaddyfile.Helper{Dispenser: caddyfile.NewTestDispenser(`ip_rate_limit 7 2s`)}
	m, err := parseCaddyfile(h)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := m.(*Handler)
	if !ok || got.Count != 7 || time.Duration(got.Window) != 2*time.Second {
		t.Errorf("parseCaddyfile = %#v", m)
	}
	if _, err := parseCaddyfile(httpcaddyfile.Helper{Dispenser: caddyfile.NewTestDispenser(`ip_rate_limit 7`)}); err == nil {
		t.Error("parseCaddyfile accepted one argument")
	}
}
