package admin

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
	"socialrouter/caddymodule/webhooks"
)

// webhookRoutes registers the webhook routes:
//
//	POST   /sdr/accounts/{id}/webhooks     {"url", "events", "mode"} → 201, the secret once
//	GET    /sdr/accounts/{id}/webhooks     the account's endpoints of ?mode= (no secrets)
//	DELETE /sdr/webhooks/{id}              → 204
//	POST   /sdr/webhooks/{id}/rotate       → 200, the new secret once
//	POST   /sdr/webhooks/{id}/test         → 202, a webhook.test delivery queued
//	GET    /sdr/webhooks/{id}/deliveries   the delivery log, newest first (?limit=, default 50)
//	POST   /sdr/deliveries/{id}/resend     → 202, one more attempt now, same webhook-id
func (h *Handler) webhookRoutes() {
	h.route("/sdr/accounts/{id}/webhooks", h.accountWebhooks, http.MethodPost, http.MethodGet)
	h.route("/sdr/webhooks/{id}", h.deleteWebhook, http.MethodDelete)
	h.route("/sdr/webhooks/{id}/rotate", h.rotateWebhook, http.MethodPost)
	h.route("/sdr/webhooks/{id}/test", h.testWebhook, http.MethodPost)
	h.route("/sdr/webhooks/{id}/deliveries", h.webhookDeliveries, http.MethodGet)
	h.route("/sdr/deliveries/{id}/resend", h.resendDelivery, http.MethodPost)
}

// Default and largest size of a delivery log page.
const (
	defaultDeliveries = 50
	maxDeliveries     = 500
)

// webhookErr maps the webhooks package's refusals to their statuses.
func webhookErr(err error, what string) error {
	switch {
	case errors.Is(err, webhooks.ErrInvalidURL), errors.Is(err, webhooks.ErrInvalidEvents):
		return apiErr(http.StatusBadRequest, "%v", err)
	case errors.Is(err, webhooks.ErrTooManyEndpoints), errors.Is(err, webhooks.ErrDisabled):
		return apiErr(http.StatusConflict, "%s: %v", what, err)
	}
	return storeErr(err, what)
}

// accountWebhooks serves POST (register) and GET (list)
// /sdr/accounts/{id}/webhooks. The body's "mode" (or ?mode= on a GET),
// "live" by default or "test", picks the live account's endpoints or its
// test twin's (testmode.md), so the operator never spells <id>~test.
func (h *Handler) accountWebhooks(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := h.Store.GetAccount(r.Context(), id); err != nil {
		return storeErr(err, "account "+id)
	}
	if r.Method == http.MethodGet {
		acct, err := h.webhookAccount(r, id, r.URL.Query().Get("mode"), false)
		if err != nil {
			return err
		}
		var eps []store.WebhookEndpoint
		if acct != "" {
			if eps, err = h.Webhooks.List(r.Context(), acct); err != nil {
				return storeErr(err, "webhooks of "+acct)
			}
		}
		if eps == nil {
			eps = []store.WebhookEndpoint{}
		}
		return writeJSON(w, http.StatusOK, map[string]any{"webhooks": eps})
	}
	var body struct {
		URL    string   `json:"url"`
		Events []string `json:"events"`
		Mode   string   `json:"mode"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	acct, err := h.webhookAccount(r, id, body.Mode, true)
	if err != nil {
		return err
	}
	e, err := h.Webhooks.Create(r.Context(), acct, body.URL, body.Events)
	if err != nil {
		return webhookErr(err, "account "+acct)
	}
	return writeJSON(w, http.StatusCreated, map[string]any{
		"id": e.ID, "account_id": e.AccountID, "mode": testmode.ModeOf(e.AccountID), "url": e.URL, "events": e.Events,
		"secret": e.Secret, "created_at": e.CreatedAt,
	})
}

// webhookAccount is the account whose endpoints mode names on the account
// id: id itself for live, its test twin for test (created with the starting
// test balance when create, "" when it does not exist yet). A twin id,
// <id>~test, is its own test mode, as before modes were named.
func (h *Handler) webhookAccount(r *http.Request, id, mode string, create bool) (string, error) {
	if !testmode.ValidMode(mode) {
		return "", apiErr(http.StatusBadRequest, `mode must be "live" (the default) or "test"`)
	}
	if testmode.IsTest(id) {
		if mode == testmode.Live {
			return "", apiErr(http.StatusBadRequest, "%s is a test account; its live endpoints are %s's", id, testmode.LiveAccountID(id))
		}
		return id, nil
	}
	if mode != testmode.Test {
		return id, nil
	}
	if !create {
		if _, err := h.Store.GetAccount(r.Context(), testmode.AccountID(id)); errors.Is(err, store.ErrNotFound) {
			return "", nil
		} else if err != nil {
			return "", storeErr(err, "test account of "+id)
		}
		return testmode.AccountID(id), nil
	}
	twin, err := testmode.Ensure(r.Context(), h.Store, id, time.Now().UTC())
	if err != nil {
		return "", storeErr(err, "test account of "+id)
	}
	return twin.ID, nil
}

// deleteWebhook serves DELETE /sdr/webhooks/{id}.
func (h *Handler) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.Webhooks.Delete(r.Context(), id); err != nil {
		return storeErr(err, "webhook "+id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// rotateWebhook serves POST /sdr/webhooks/{id}/rotate.
func (h *Handler) rotateWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e, err := h.Webhooks.Rotate(r.Context(), id)
	if err != nil {
		return storeErr(err, "webhook "+id)
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"id": e.ID, "secret": e.Secret, "previous_secret_expires_at": e.PreviousUntil,
	})
}

// testWebhook serves POST /sdr/webhooks/{id}/test.
func (h *Handler) testWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	d, err := h.Webhooks.SendTest(r.Context(), id)
	if err != nil {
		return webhookErr(err, "webhook "+id)
	}
	return writeJSON(w, http.StatusAccepted, webhooks.View(d))
}

// webhookDeliveries serves GET /sdr/webhooks/{id}/deliveries.
func (h *Handler) webhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	limit := defaultDeliveries
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDeliveries {
			return apiErr(http.StatusBadRequest, "limit must be a whole number from 1 to %d", maxDeliveries)
		}
		limit = n
	}
	e, err := h.Webhooks.Get(r.Context(), id)
	if err != nil {
		return storeErr(err, "webhook "+id)
	}
	ds, err := h.Webhooks.Deliveries(r.Context(), e.AccountID, e.ID, limit)
	if err != nil {
		return storeErr(err, "deliveries of "+id)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"webhook": e, "deliveries": webhooks.Views(ds)})
}

// resendDelivery serves POST /sdr/deliveries/{id}/resend.
func (h *Handler) resendDelivery(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	d, err := h.Webhooks.Resend(r.Context(), id)
	if err != nil {
		return storeErr(err, "delivery "+id)
	}
	return writeJSON(w, http.StatusAccepted, webhooks.View(d))
}
