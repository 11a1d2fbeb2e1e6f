package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

func init() {
	caddy.RegisterModule(Admin{})
}

// Admin is the admin.api.social_router module: account, key and source
// routes under /sdr/ on Caddy's admin endpoint. It is a fresh instance,
// not the app, so it reaches the running app through the package-level
// current pointer.
type Admin struct{}

// CaddyModule returns the Caddy module information.
func (Admin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.social_router",
		New: func() caddy.Module { return new(Admin) },
	}
}

// Routes returns the admin routes.
func (Admin) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/sdr/", Handler: caddy.AdminHandlerFunc(serveAdmin)}}
}

var accountIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func apiErr(status int, format string, args ...any) error {
	return caddy.APIError{HTTPStatus: status, Err: fmt.Errorf(format, args...)}
}

func storeErr(err error, what string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apiErr(http.StatusNotFound, "%s not found", what)
	case errors.Is(err, store.ErrExists):
		return apiErr(http.StatusConflict, "%s already exists", what)
	case errors.Is(err, store.ErrInsufficient):
		return apiErr(http.StatusConflict, "the balance cannot go below zero")
	}
	return apiErr(http.StatusInternalServerError, "%s: %v", what, err)
}

func decodeAdmin(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return apiErr(http.StatusBadRequest, "reading body: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apiErr(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	return nil
}

func serveAdmin(w http.ResponseWriter, r *http.Request) error {
	a := current.Load()
	if a == nil {
		return apiErr(http.StatusServiceUnavailable, "the social_router app is not running")
	}
	seg := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/sdr"), "/"), "/")
	ctx := r.Context()
	now := time.Now().UTC()
	method := func(m string) error {
		if r.Method != m {
			w.Header().Set("Allow", m)
			return apiErr(http.StatusMethodNotAllowed, "method %s not allowed; use %s", r.Method, m)
		}
		return nil
	}
	switch {
	case len(seg) == 1 && seg[0] == "accounts":
		if err := method(http.MethodPost); err != nil {
			return err
		}
		var body struct {
			ID      string          `json:"id"`
			Balance *credits.Micros `json:"balance"`
		}
		if err := decodeAdmin(r, &body); err != nil {
			return err
		}
		if !accountIDRE.MatchString(body.ID) {
			return apiErr(http.StatusBadRequest, "id must be 1-64 characters of letters, digits, '_', '.', '-'")
		}
		bal := credits.Micros(0)
		if body.Balance != nil {
			bal = *body.Balance
		}
		if bal < 0 {
			return apiErr(http.StatusBadRequest, "balance must not be negative")
		}
		acct, err := a.store.CreateAccount(ctx, body.ID, bal, now)
		if err != nil {
			return storeErr(err, "account "+body.ID)
		}
		return adminJSON(w, http.StatusCreated, acct)

	case len(seg) == 2 && seg[0] == "accounts":
		if err := method(http.MethodGet); err != nil {
			return err
		}
		acct, err := a.store.GetAccount(ctx, seg[1])
		if err != nil {
			return storeErr(err, "account "+seg[1])
		}
		keys, err := a.store.ListKeys(ctx, seg[1])
		if err != nil {
			return storeErr(err, "keys of "+seg[1])
		}
		if keys == nil {
			keys = []store.Key{}
		}
		return adminJSON(w, http.StatusOK, map[string]any{
			"id": acct.ID, "balance": acct.Balance, "created_at": acct.CreatedAt, "keys": keys,
		})

	case len(seg) == 3 && seg[0] == "accounts" && seg[2] == "credits":
		if err := method(http.MethodPost); err != nil {
			return err
		}
		var body struct {
			Amount *credits.Micros `json:"amount"`
		}
		if err := decodeAdmin(r, &body); err != nil {
			return err
		}
		if body.Amount == nil || *body.Amount == 0 {
			return apiErr(http.StatusBadRequest, "amount must be a non-zero number of credits")
		}
		acct, err := a.store.AddCredits(ctx, seg[1], *body.Amount)
		if err != nil {
			return storeErr(err, "account "+seg[1])
		}
		return adminJSON(w, http.StatusOK, map[string]any{"id": acct.ID, "balance": acct.Balance})

	case len(seg) == 3 && seg[0] == "accounts" && seg[2] == "keys":
		if err := method(http.MethodPost); err != nil {
			return err
		}
		var body struct {
			Name        string             `json:"name"`
			CreditLimit *store.CreditLimit `json:"credit_limit"`
		}
		if err := decodeAdmin(r, &body); err != nil {
			return err
		}
		if err := checkLimit(body.CreditLimit); err != nil {
			return err
		}
		if _, err := a.store.GetAccount(ctx, seg[1]); err != nil {
			return storeErr(err, "account "+seg[1])
		}
		secret, k, err := newKey(a.KeyPrefix, seg[1], body.Name, body.CreditLimit, now)
		if err != nil {
			return apiErr(http.StatusInternalServerError, "generating key: %v", err)
		}
		if err := a.store.CreateKey(ctx, k); err != nil {
			return storeErr(err, "key")
		}
		return adminJSON(w, http.StatusCreated, map[string]any{
			"id": k.ID, "key": secret, "account_id": k.AccountID, "name": k.Name,
			"display": k.Display, "credit_limit": k.CreditLimit, "created_at": k.CreatedAt,
		})

	case len(seg) == 2 && seg[0] == "keys":
		switch r.Method {
		case http.MethodPatch:
			var body struct {
				CreditLimit json.RawMessage `json:"credit_limit"`
			}
			if err := decodeAdmin(r, &body); err != nil {
				return err
			}
			if body.CreditLimit == nil {
				return apiErr(http.StatusBadRequest, `send {"credit_limit": {"period": "day", "credits": 2}} or {"credit_limit": null}`)
			}
			var lim *store.CreditLimit
			if string(body.CreditLimit) != "null" {
				lim = new(store.CreditLimit)
				if err := json.Unmarshal(body.CreditLimit, lim); err != nil {
					return apiErr(http.StatusBadRequest, "invalid credit_limit: %v", err)
				}
				if err := checkLimit(lim); err != nil {
					return err
				}
			}
			k, err := a.store.SetKeyLimit(ctx, seg[1], lim)
			if err != nil {
				return storeErr(err, "key "+seg[1])
			}
			return adminJSON(w, http.StatusOK, k)
		case http.MethodDelete:
			if _, err := a.store.RevokeKey(ctx, seg[1], now); err != nil {
				return storeErr(err, "key "+seg[1])
			}
			w.WriteHeader(http.StatusNoContent)
			return nil
		default:
			w.Header().Set("Allow", "PATCH, DELETE")
			return apiErr(http.StatusMethodNotAllowed, "method %s not allowed; use PATCH or DELETE", r.Method)
		}

	case len(seg) == 3 && seg[0] == "sources" && seg[2] == "status":
		if err := method(http.MethodPut); err != nil {
			return err
		}
		src, ok := a.reg.Source(seg[1])
		if !ok {
			return apiErr(http.StatusNotFound, "source %s not found", seg[1])
		}
		var body struct {
			Status *string `json:"status"`
		}
		if err := decodeAdmin(r, &body); err != nil {
			return err
		}
		st := ""
		if body.Status != nil {
			st = *body.Status
			switch st {
			case "active", "degraded", "down", "coming_soon":
			default:
				return apiErr(http.StatusBadRequest, "status must be active, degraded, down, coming_soon or null")
			}
		}
		breakers.SetOverride(src.ID, st)
		return adminJSON(w, http.StatusOK, a.reg.Provider(src, a.sourceStatus))
	}
	return apiErr(http.StatusNotFound, "no admin route %s %s", r.Method, r.URL.Path)
}

func checkLimit(l *store.CreditLimit) error {
	if err := l.Validate(); err != nil {
		return apiErr(http.StatusBadRequest, "%v", err)
	}
	return nil
}

func adminJSON(w http.ResponseWriter, status int, v any) error {
	writeJSON(w, status, v)
	return nil
}

// Interface guards
var _ caddy.AdminRouter = (*Admin)(nil)
