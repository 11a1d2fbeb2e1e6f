package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
)

// normalizeRedirectURI checks a redirect URI (checkRedirectURI) and gives
// the form the server keeps, shows and compares: its host in ASCII. The
// consent page names the host the browser goes back to; a host in
// Unicode could look like another site's ("gооgle.com" with Cyrillic о),
// so an internationalized host is kept as its IDNA punycode
// ("xn--ggle-55da.com"), which is what DNS resolves anyway. A URI with a
// control, format or bidirectional character anywhere (one that reorders
// or hides what the page shows) is refused, and so is a host that is not
// a DNS name or an IP address (what could break out of the header it is
// written into, such as "a.example;sandbox"). An ASCII URI comes back as
// it was written, so a client can match it character for character.
func normalizeRedirectURI(raw string) (string, error) {
	if err := invisible(raw); err != nil {
		return "", err
	}
	if err := checkRedirectURI(raw); err != nil {
		return "", err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("not an absolute URI")
	}
	host := u.Hostname()
	if err := invisible(host); err != nil {
		return "", err
	}
	if strings.HasPrefix(u.Host, "[") {
		if net.ParseIP(host) == nil {
			return "", errors.New("the host is not an IP address in brackets")
		}
		return raw, nil
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil || ascii == "" || strings.ContainsAny(ascii, " ;,\"'") {
		return "", fmt.Errorf("the host is not a valid DNS name")
	}
	if strings.Contains(raw, "://"+u.Host) && strings.EqualFold(ascii, host) {
		return raw, nil
	}
	if p := u.Port(); p != "" {
		ascii += ":" + p
	}
	u.Host = ascii
	return u.String(), nil
}

// invisible refuses a control, format (zero-width, bidirectional
// embedding, override, isolate or mark) or space character.
func invisible(s string) error {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) || unicode.Is(unicode.Bidi_Control, r) {
			return fmt.Errorf("it holds the invisible or bidirectional character %U", r)
		}
	}
	return nil
}

// matchRedirectURI is the registered URI an authorize or token request's
// redirect_uri names, compared in the kept form; "" if none.
func matchRedirectURI(registered []string, given string) string {
	n, err := normalizeRedirectURI(given)
	if err != nil {
		return ""
	}
	for _, r := range registered {
		if r == n {
			return r
		}
	}
	return ""
}

// FormActionSource is the CSP source of a redirect URI's origin
// (scheme://host[:port]) for the consent page's form-action, or "" when
// the URI's host is not plainly a DNS name or an IP address: nothing read
// from a client's registration is written into a header unchecked (a
// registration kept from before hosts were checked included).
func FormActionSource(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return ""
	}
	for _, r := range u.Host {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-:[]", r)) {
			return ""
		}
	}
	if u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
