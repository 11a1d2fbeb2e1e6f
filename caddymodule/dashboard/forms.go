package dashboard

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// Every form of the dashboard is read and validated here, so each rule
// lives in one place. A validation error is a message for the form's page.

// maxFormBytes bounds a form body.
const maxFormBytes = 16 << 10

// Password length bounds: 12 characters at least (NIST 800-63B favours
// length over composition rules); at most 256 bytes, so hashing cost is
// bounded.
const (
	minPassword = 12
	maxPassword = 256
)

func parseForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("the form could not be read")
	}
	return nil
}

type signinForm struct {
	Email    string
	Password string
	Next     string
}

func readSignin(w http.ResponseWriter, r *http.Request) (signinForm, error) {
	if err := parseForm(w, r); err != nil {
		return signinForm{}, err
	}
	f := signinForm{
		Email:    strings.ToLower(strings.TrimSpace(r.PostFormValue("email"))),
		Password: r.PostFormValue("password"),
		Next:     r.PostFormValue("next"),
	}
	if f.Email == "" || f.Password == "" {
		return f, fmt.Errorf("enter your email and password")
	}
	if len(f.Email) > 254 || len(f.Password) > maxPassword {
		return f, fmt.Errorf("incorrect email or password")
	}
	return f, nil
}

// readNewPassword reads a new password and its confirmation.
func readNewPassword(r *http.Request) (string, error) {
	pw, again := r.PostFormValue("password"), r.PostFormValue("password_confirm")
	switch {
	case utf8.RuneCountInString(pw) < minPassword:
		return "", fmt.Errorf("the password needs at least %d characters", minPassword)
	case len(pw) > maxPassword:
		return "", fmt.Errorf("the password may have at most %d bytes", maxPassword)
	case pw != again:
		return "", fmt.Errorf("the two passwords differ")
	}
	return pw, nil
}

type passwordForm struct {
	Current string
	New     string
}

func readPasswordChange(w http.ResponseWriter, r *http.Request) (passwordForm, error) {
	if err := parseForm(w, r); err != nil {
		return passwordForm{}, err
	}
	f := passwordForm{Current: r.PostFormValue("current_password")}
	if f.Current == "" {
		return f, fmt.Errorf("enter your current password")
	}
	var err error
	f.New, err = readNewPassword(r)
	return f, err
}

// parseCredits reads an amount typed in a form: digits only
// (credits.ParseTyped); a negative amount is refused by
// store.CreditLimit.Validate, with its own message.
func parseCredits(s string) (credits.Micros, error) { return credits.ParseTyped(s) }

// readLimit reads an optional credit limit: empty credits means no limit.
// store.CreditLimit.Validate is the rule.
func readLimit(r *http.Request) (*store.CreditLimit, error) {
	amount := strings.TrimSpace(r.PostFormValue("limit_credits"))
	if amount == "" {
		return nil, nil
	}
	c, err := parseCredits(amount)
	if err != nil {
		return nil, fmt.Errorf("credit limit: %v", err)
	}
	l := &store.CreditLimit{Period: r.PostFormValue("limit_period"), Credits: c}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return l, nil
}

type keyForm struct {
	Name  string
	Limit *store.CreditLimit
}

func readKey(w http.ResponseWriter, r *http.Request) (keyForm, error) {
	if err := parseForm(w, r); err != nil {
		return keyForm{}, err
	}
	f := keyForm{Name: strings.TrimSpace(r.PostFormValue("name"))}
	if f.Name == "" {
		return f, fmt.Errorf("give the key a name")
	}
	if utf8.RuneCountInString(f.Name) > 64 {
		return f, fmt.Errorf("the name may have at most 64 characters")
	}
	var err error
	f.Limit, err = readLimit(r)
	return f, err
}

// runFilter reads the runs page's query: service, status, from and to
// (dates, to inclusive).
func runFilter(r *http.Request) (store.RunFilter, map[string]string, error) {
	q := r.URL.Query()
	vals := map[string]string{"service": q.Get("service"), "status": q.Get("status"), "from": q.Get("from"), "to": q.Get("to")}
	f := store.RunFilter{Service: vals["service"], Status: vals["status"], Limit: 200}
	if p, svc, ok := strings.Cut(f.Service, "/"); ok { // platform/service, as the filter lists them
		f.Platform, f.Service = p, svc
	}
	if f.Status != "" && f.Status != "completed" && f.Status != "failed" {
		return f, vals, fmt.Errorf("status must be completed or failed")
	}
	for _, d := range []struct {
		name string
		dst  *time.Time
		add  int
	}{{"from", &f.Since, 0}, {"to", &f.Until, 1}} {
		if vals[d.name] == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, vals[d.name])
		if err != nil {
			return f, vals, fmt.Errorf("%s must be a date (YYYY-MM-DD)", d.name)
		}
		*d.dst = t.AddDate(0, 0, d.add)
	}
	return f, vals, nil
}
