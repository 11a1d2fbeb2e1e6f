// Package admin is the administration API of accounts, keys, member
// invitations, webhook endpoints, backups and source overrides (the
// /sdr/… routes of Caddy's admin endpoint) as a plain handler over the
// store methods it declares (Store, store.go) and a registry. Caddy's
// admin module adapts it; errors are returned, as Caddy's admin handlers
// return them, with the HTTP status they answer with (a failure kind's
// from the API's table, errwire).
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"socialrouter/caddymodule/api/errwire"
	"socialrouter/caddymodule/cache"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
	"socialrouter/caddymodule/webhooks"
	"socialrouter/internal/httpjson"
	"socialrouter/internal/jsonscan"
)

// Config is what the admin routes work with; every field is required.
type Config struct {
	Store     Store
	Registry  *registry.Registry
	KeyPrefix string
	// SetSourceOverride sets (or with "" clears) a source's status override.
	SetSourceOverride func(sourceID, status string)
	// SourceStatus is the live status of a source.
	SourceStatus func(sourceID string) string
	// Webhooks registers endpoints and queues test events (webhooks.go).
	Webhooks *webhooks.Service
	// Cache is the freshness cache (cache.go); nil: the store keeps none.
	Cache *cache.Cache
}

// Error is an admin answer other than success: an HTTP status and what
// went wrong.
type Error struct {
	Status int
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func apiErr(status int, format string, args ...any) error {
	return &Error{Status: status, Err: fmt.Errorf(format, args...)}
}

// kindErr is the answer to a failure of kind k, with the status the API's
// table (errwire) gives it on every surface.
func kindErr(k errkind.Kind, format string, args ...any) error {
	return apiErr(errwire.Of(k).Status, format, args...)
}

// Handler serves /sdr/…. Build it with New.
type Handler struct {
	Config
	mux *http.ServeMux
}

// New builds the admin routes.
func New(c Config) *Handler {
	h := &Handler{Config: c, mux: http.NewServeMux()}
	h.route("/sdr/accounts", h.createAccount, http.MethodPost)
	h.route("/sdr/accounts/{id}", h.getAccount, http.MethodGet)
	h.route("/sdr/accounts/{id}/credits", h.addCredits, http.MethodPost)
	h.route("/sdr/accounts/{id}/test-balance/reset", h.resetTestBalance, http.MethodPost)
	h.route("/sdr/accounts/{id}/keys", h.createKey, http.MethodPost)
	h.route("/sdr/accounts/{id}/members", h.inviteMember, http.MethodPost)
	h.route("/sdr/keys/{id}", h.key, http.MethodPatch, http.MethodDelete)
	h.route("/sdr/sources/{id}/status", h.setSourceStatus, http.MethodPut)
	h.route("/sdr/backup", h.backup, http.MethodGet)
	h.route("/sdr/accounts/{id}/transactions", h.transactions, http.MethodGet)
	h.route("/sdr/payments/orphans", h.orphans, http.MethodGet)
	h.webhookRoutes()
	h.cacheRoutes()
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		errOf(r).err = apiErr(http.StatusNotFound, "no admin route %s %s", r.Method, pathOf(r))
	})
	return h
}

// result carries a route's error out of the mux to Serve.
type result struct {
	err  error
	path string
}

type resultKey struct{}

func errOf(r *http.Request) *result { return r.Context().Value(resultKey{}).(*result) }

func pathOf(r *http.Request) string { return errOf(r).path }

// route registers a path for the given methods; any other method is a 405
// with Allow.
func (h *Handler) route(pattern string, fn func(http.ResponseWriter, *http.Request) error, methods ...string) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		res := errOf(r)
		for _, m := range methods {
			if r.Method == m {
				res.err = fn(w, r)
				return
			}
		}
		w.Header().Set("Allow", strings.Join(methods, ", "))
		res.err = apiErr(http.StatusMethodNotAllowed, "method %s not allowed; use %s", r.Method, strings.Join(methods, " or "))
	})
}

// Serve answers an /sdr/ request, or returns the error to answer. Leading
// and trailing slashes of the path are ignored.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request) error {
	res := &result{path: r.URL.Path}
	seg := strings.Trim(strings.TrimPrefix(r.URL.Path, "/sdr"), "/")
	r = r.WithContext(context.WithValue(r.Context(), resultKey{}, res))
	if canon := "/sdr/" + seg; canon != r.URL.Path || r.URL.RawPath != "" {
		u := *r.URL
		u.Path, u.RawPath = canon, ""
		r.URL = &u
	}
	h.mux.ServeHTTP(w, r)
	return res.err
}

var accountIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func storeErr(err error, what string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apiErr(http.StatusNotFound, "%s not found", what)
	case errors.Is(err, store.ErrExists):
		return apiErr(http.StatusConflict, "%s already exists", what)
	case errors.Is(err, store.ErrInsufficient):
		return apiErr(http.StatusConflict, "the balance cannot go below zero")
	case errors.Is(err, store.ErrOverflow):
		return apiErr(http.StatusConflict, "%s: %v; nothing was added", what, store.ErrOverflow)
	}
	return kindErr(errkind.Internal, "%s: %v", what, err)
}

// maxBody is the largest admin request body.
const maxBody = 1 << 20

// decode reads the request body as exactly one JSON object into v. It is as
// strict as the /v1 API: an unknown field, a repeated key (encoding/json
// would keep the last one, so {"id": "a", "id": "b"} would create "b"),
// data after the object, or a body over 1 MiB (413) is refused.
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return apiErr(http.StatusBadRequest, "reading body: %v", err)
	}
	if len(b) > maxBody {
		return apiErr(http.StatusRequestEntityTooLarge, "the body is over %d bytes", maxBody)
	}
	if err := decodeJSON(b, v); err != nil {
		return apiErr(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	return nil
}

// decodeJSON decodes the JSON text b into v strictly (see decode).
func decodeJSON(b []byte, v any) error {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errors.New("want one JSON object")
	}
	if k, dup := jsonscan.FindDuplicate(b); dup {
		return fmt.Errorf("key %q appears twice", k)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// createAccount serves POST /sdr/accounts.
func (h *Handler) createAccount(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		ID      string          `json:"id"`
		Balance *credits.Micros `json:"balance"`
	}
	if err := decode(r, &body); err != nil {
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
	acct, err := h.Store.CreateAccount(r.Context(), body.ID, bal, time.Now().UTC())
	if err != nil {
		return storeErr(err, "account "+body.ID)
	}
	return writeJSON(w, http.StatusCreated, acct)
}

// getAccount serves GET /sdr/accounts/{id}.
func (h *Handler) getAccount(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	acct, err := h.Store.GetAccount(r.Context(), id)
	if err != nil {
		return storeErr(err, "account "+id)
	}
	keys, err := h.Store.ListKeys(r.Context(), id)
	if err != nil {
		return storeErr(err, "keys of "+id)
	}
	if keys == nil {
		keys = []store.Key{}
	}
	out := map[string]any{
		"id": acct.ID, "balance": acct.Balance, "created_at": acct.CreatedAt, "keys": keys,
	}
	if !testmode.IsTest(id) {
		// The test twin, once a test key made it: its balance and keys.
		if twin, err := h.Store.GetAccount(r.Context(), testmode.AccountID(id)); err == nil {
			tk, err := h.Store.ListKeys(r.Context(), twin.ID)
			if err != nil {
				return storeErr(err, "test keys of "+id)
			}
			out["test_balance"], out["keys"] = twin.Balance, append(keys, tk...)
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// addCredits serves POST /sdr/accounts/{id}/credits.
func (h *Handler) addCredits(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var body struct {
		Amount *credits.Micros `json:"amount"`
		Reason string          `json:"reason"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Amount == nil || *body.Amount == 0 {
		return apiErr(http.StatusBadRequest, "amount must be a non-zero number of credits")
	}
	if len(body.Reason) > 500 {
		return apiErr(http.StatusBadRequest, "reason must be at most 500 bytes")
	}
	if body.Reason != "" {
		// The reason goes on the ledger row the customer reads.
		e, err := h.Store.Move(r.Context(), store.LedgerEntry{AccountID: id, Kind: store.LedgerAdjustment, Amount: *body.Amount, Reason: body.Reason})
		if err != nil {
			return storeErr(err, "account "+id)
		}
		return writeJSON(w, http.StatusOK, map[string]any{"id": id, "balance": e.Balance, "transaction": e.ID})
	}
	acct, err := h.Store.AddCredits(r.Context(), id, *body.Amount)
	if err != nil {
		return storeErr(err, "account "+id)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"id": acct.ID, "balance": acct.Balance})
}

// resetTestBalance serves POST /sdr/accounts/{id}/test-balance/reset: the
// test balance of the live account {id} goes back to testmode.StartBalance
// (its twin is created first if no test key made it), as the dashboard's
// reset does. Holds of test calls in flight stay.
func (h *Handler) resetTestBalance(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if testmode.IsTest(id) {
		return apiErr(http.StatusBadRequest, "%s is a test account; reset the test balance of %s", id, testmode.LiveAccountID(id))
	}
	twin, err := testmode.Reset(r.Context(), h.Store, id, time.Now().UTC())
	if err != nil {
		return storeErr(err, "account "+id)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"id": id, "test_account_id": twin.ID, "test_balance": twin.Balance})
}

// createKey serves POST /sdr/accounts/{id}/keys: the only answer that
// shows the key's secret.
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var body struct {
		Name        string             `json:"name"`
		CreditLimit *store.CreditLimit `json:"credit_limit"`
		Mode        string             `json:"mode"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if err := checkLimit(body.CreditLimit); err != nil {
		return err
	}
	if !testmode.ValidMode(body.Mode) {
		return apiErr(http.StatusBadRequest, `mode must be "live" (the default) or "test"`)
	}
	now := time.Now().UTC()
	if _, err := h.Store.GetAccount(r.Context(), id); err != nil {
		return storeErr(err, "account "+id)
	}
	if body.Mode == testmode.Test && !testmode.IsTest(id) {
		// A test key belongs to the account's test twin, created with the
		// starting test balance on the first test key.
		twin, err := testmode.Ensure(r.Context(), h.Store, id, now)
		if err != nil {
			return storeErr(err, "test account of "+id)
		}
		id = twin.ID
	}
	secret, k, err := NewKey(h.KeyPrefix, id, body.Name, body.CreditLimit, now)
	if err != nil {
		return kindErr(errkind.Internal, "generating key: %v", err)
	}
	if err := h.Store.CreateKey(r.Context(), k); err != nil {
		return storeErr(err, "key")
	}
	return writeJSON(w, http.StatusCreated, map[string]any{
		"id": k.ID, "key": secret, "account_id": k.AccountID, "name": k.Name, "mode": testmode.ModeOf(k.AccountID),
		"display": k.Display, "credit_limit": k.CreditLimit, "created_at": k.CreatedAt,
	})
}

// key serves PATCH (set or clear the credit limit) and DELETE (revoke)
// /sdr/keys/{id}.
func (h *Handler) key(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if r.Method == http.MethodDelete {
		if _, err := h.Store.RevokeKey(r.Context(), id, time.Now().UTC()); err != nil {
			return storeErr(err, "key "+id)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	var body struct {
		CreditLimit json.RawMessage `json:"credit_limit"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.CreditLimit == nil {
		return apiErr(http.StatusBadRequest, `send {"credit_limit": {"period": "day", "credits": 2}} or {"credit_limit": null}`)
	}
	var lim *store.CreditLimit
	if string(body.CreditLimit) != "null" {
		lim = new(store.CreditLimit)
		if err := decodeJSON(body.CreditLimit, lim); err != nil {
			return apiErr(http.StatusBadRequest, "invalid credit_limit: %v", err)
		}
		if err := checkLimit(lim); err != nil {
			return err
		}
	}
	if k, err := h.Store.GetKey(r.Context(), id); err != nil {
		return storeErr(err, "key "+id)
	} else if k.RevokedAt != nil {
		// A revoked key authenticates nothing: a limit on it would only
		// mislead whoever reads the key later.
		return apiErr(http.StatusConflict, "key %s was revoked on %s; its limit no longer applies", id, k.RevokedAt.UTC().Format(time.RFC3339))
	}
	k, err := h.Store.SetKeyLimit(r.Context(), id, lim)
	if err != nil {
		return storeErr(err, "key "+id)
	}
	return writeJSON(w, http.StatusOK, k)
}

// setSourceStatus serves PUT /sdr/sources/{id}/status.
func (h *Handler) setSourceStatus(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	src, ok := h.Registry.Source(id)
	if !ok {
		return apiErr(http.StatusNotFound, "source %s not found", id)
	}
	var body struct {
		Status json.RawMessage `json:"status"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	// Clearing an operator's override takes an explicit null, as PATCH
	// /sdr/keys/{id} does for a credit limit: {} is a mistake, not a reset.
	if body.Status == nil {
		return apiErr(http.StatusBadRequest, `send {"status": "down"} (active, degraded, down, coming_soon) or {"status": null} to go back to the computed status`)
	}
	st := ""
	if string(body.Status) != "null" {
		if err := json.Unmarshal(body.Status, &st); err != nil {
			return apiErr(http.StatusBadRequest, "status must be a string or null")
		}
		switch st {
		case "active", "degraded", "down", "coming_soon":
		default:
			return apiErr(http.StatusBadRequest, "status must be active, degraded, down, coming_soon or null")
		}
	}
	h.SetSourceOverride(src.ID, st)
	return writeJSON(w, http.StatusOK, h.Registry.Provider(src, h.SourceStatus))
}

func checkLimit(l *store.CreditLimit) error {
	if err := l.Validate(); err != nil {
		return apiErr(http.StatusBadRequest, "%v", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	httpjson.Write(w, status, v)
	return nil
}
