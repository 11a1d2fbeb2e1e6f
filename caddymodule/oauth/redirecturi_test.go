package oauth

import (
	"encoding/json"
	"net/url"
	"testing"
)

// TestRegisterRedirectHost: a redirect URI's host is kept as ASCII, an
// internationalized one as its punycode (IDNA), so the consent page shows
// "xn--…" rather than a look-alike of another site; control, format and
// bidirectional characters, and a host that is no DNS name, are refused.
func TestRegisterRedirectHost(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, uri, kept string // kept "": refused
	}{
		{"ascii", "https://app.example/cb", "https://app.example/cb"},
		{"upper case", "https://App.Example/cb", "https://App.Example/cb"},
		{"cyrillic look-alike", "https://g\u043e\u043egle.com/cb", "https://xn--ggle-55da.com/cb"},
		{"unicode with port", "https://b\u00fccher.example:8443/cb?x=1", "https://xn--bcher-kva.example:8443/cb?x=1"},
		{"percent-encoded unicode", "https://b%C3%BCcher.example/cb", "https://xn--bcher-kva.example/cb"},
		{"bidi override in host", "https://evil\u202e.example/cb", ""},
		{"bidi mark in path", "https://app.example/c\u200fb", ""},
		{"zero-width joiner", "https://ap\u200dp.example/cb", ""},
		{"control character", "https://app.example/c\u0001b", ""},
		{"header injection", "https://evil.example;sandbox/cb", ""},
		{"space in host", "https://evil.example%20x/cb", ""},
		{"loopback", "http://127.0.0.1:33418/cb", "http://127.0.0.1:33418/cb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"redirect_uris":[` + jsonString(tc.uri) + `]}`
			status, m := f.post(t, PathRegister, nil, body)
			if tc.kept == "" {
				if status != 400 || m["error"] != "invalid_redirect_uri" {
					t.Fatalf("%d %v, want 400 invalid_redirect_uri", status, m)
				}
				return
			}
			uris, _ := m["redirect_uris"].([]any)
			if status != 201 || len(uris) != 1 || uris[0] != tc.kept {
				t.Fatalf("%d %v, want 201 with redirect_uris [%s]", status, m, tc.kept)
			}
			// The client may go on naming its URI as it registered it: the
			// authorize request matches it to the kept form.
			client := m["client_id"].(string)
			r := f.request(client, url.Values{"redirect_uri": {tc.uri}})
			a, err := f.s.ParseAuthorize(t.Context(), r, r.URL.Query())
			if err != nil || a.RedirectURI != tc.kept {
				t.Errorf("authorize with the registered form: %v, %v; want redirect %s", a, err, tc.kept)
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestFormActionSource: only a plain scheme://host[:port] enters the
// consent page's CSP; a host that could end the directive, or carry
// another, gives nothing.
func TestFormActionSource(t *testing.T) {
	for in, want := range map[string]string{
		"https://client.example/cb?x=1":      "https://client.example",
		"http://127.0.0.1:33418/cb":          "http://127.0.0.1:33418",
		"http://[::1]:8080/cb":               "http://[::1]:8080",
		"https://xn--ggle-55da.com/cb":       "https://xn--ggle-55da.com",
		"https://evil.example;sandbox/cb":    "",
		"https://evil.example sandbox/cb":    "",
		"https://g\u043e\u043egle.com/cb":    "",
		"https://evil.example'unsafe-inline": "",
		"javascript:alert(1)":                "",
	} {
		if got := FormActionSource(in); got != want {
			t.Errorf("FormActionSource(%q) = %q, want %q", in, got, want)
		}
	}
}
