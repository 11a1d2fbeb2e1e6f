package dashboard

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/webhooks"
)

// webhookRoutes registers the webhooks page and its actions; every
// action is a POST with the csrf input.
func (h *Handler) webhookRoutes(member func(string, func(http.ResponseWriter, *http.Request, *Session))) {
	member("GET /webhooks", h.webhooksPage)
	member("POST /webhooks", h.createWebhook)
	member("POST /webhooks/{id}/rotate", h.rotateWebhook)
	member("POST /webhooks/{id}/delete", h.deleteWebhook)
	member("POST /webhooks/{id}/test", h.testWebhook)
	member("POST /webhooks/deliveries/{id}/resend", h.resendDelivery)
}

// webhookLogSize is how many of the account's latest deliveries the page
// lists.
const webhookLogSize = 50

type webhooksData struct {
	Endpoints  []store.WebhookEndpoint
	Deliveries []deliveryRow
	Events     []string
	CSRF       string
	Created    string // a secret just made (created or rotated), shown once
	CreatedFor string // the URL of its endpoint
	Error      string
	URL        string
	Checked    map[string]bool // the events ticked in the form
}

type deliveryRow struct {
	store.WebhookDelivery
	URL string
}

// Label is the delivery's status in words.
func (d deliveryRow) Label() string {
	switch d.Status {
	case store.DeliverySucceeded:
		return "delivered"
	case store.DeliveryFailed:
		return "failed"
	}
	if d.Attempts > 0 {
		return "retrying"
	}
	return "queued"
}

func checked(events []string) map[string]bool {
	m := make(map[string]bool, len(events))
	for _, e := range events {
		m[e] = true
	}
	return m
}

// showWebhooks renders the webhooks page with status and extra state.
func (h *Handler) showWebhooks(w http.ResponseWriter, r *http.Request, s *Session, status int, d webhooksData) {
	ctx := r.Context()
	eps, err := h.Webhooks.List(ctx, s.AccountID)
	if err != nil {
		h.failed(w, r, s, "listing webhooks", err)
		return
	}
	ds, err := h.Webhooks.Deliveries(ctx, s.AccountID, "", webhookLogSize)
	if err != nil {
		h.failed(w, r, s, "listing webhook deliveries", err)
		return
	}
	urls := map[string]string{}
	for _, e := range eps {
		urls[e.ID] = e.URL
	}
	for _, x := range ds {
		d.Deliveries = append(d.Deliveries, deliveryRow{WebhookDelivery: x, URL: urls[x.EndpointID]})
	}
	slices.Reverse(eps) // newest first, as keys
	d.Endpoints, d.Events, d.CSRF = eps, webhooks.Events, csrfToken(s)
	if d.Checked == nil {
		d.Checked = checked(webhooks.Events)
	}
	h.render(w, status, "webhooks", s, view{Title: "Webhooks", Nav: "webhooks", Data: d})
}

// webhooksPage serves GET /webhooks.
func (h *Handler) webhooksPage(w http.ResponseWriter, r *http.Request, s *Session) {
	if h.Webhooks == nil {
		h.notFound(w, r, s)
		return
	}
	h.showWebhooks(w, r, s, http.StatusOK, webhooksData{})
}

// webhookForm checks a webhook form's csrf input: these forms hand out
// signing secrets and aim the gateway's requests at a URL, so they carry
// a token on top of the cross-site check.
func (h *Handler) webhookForm(w http.ResponseWriter, r *http.Request, s *Session) bool {
	return h.tokenForm(w, r, s, h.Webhooks != nil, "webhooks")
}

// createWebhook serves POST /webhooks: the secret is in this one answer.
func (h *Handler) createWebhook(w http.ResponseWriter, r *http.Request, s *Session) {
	if !h.webhookForm(w, r, s) {
		return
	}
	rawURL := strings.TrimSpace(r.PostFormValue("url"))
	events := r.PostForm["events"]
	e, err := h.Webhooks.Create(r.Context(), s.AccountID, rawURL, events)
	switch {
	case errors.Is(err, webhooks.ErrInvalidURL), errors.Is(err, webhooks.ErrInvalidEvents), errors.Is(err, webhooks.ErrTooManyEndpoints):
		status := http.StatusBadRequest
		if errors.Is(err, webhooks.ErrTooManyEndpoints) {
			status = http.StatusConflict
		}
		h.showWebhooks(w, r, s, status, webhooksData{Error: err.Error(), URL: rawURL, Checked: checked(events)})
		return
	case err != nil:
		h.failed(w, r, s, "creating webhook", err)
		return
	}
	h.record(r.Context(), s, "webhook_created", e.URL+" ("+strings.Join(e.Events, ", ")+")")
	h.showWebhooks(w, r, s, http.StatusCreated, webhooksData{Created: e.Secret, CreatedFor: e.URL})
}

// ownWebhook returns an endpoint of the member's account; another
// account's is not found, as a missing one.
func (h *Handler) ownWebhook(r *http.Request, s *Session) (store.WebhookEndpoint, error) {
	e, err := h.Webhooks.Get(r.Context(), r.PathValue("id"))
	if err == nil && e.AccountID != s.AccountID {
		err = store.ErrNotFound
	}
	return e, err
}

func (h *Handler) webhookError(w http.ResponseWriter, r *http.Request, s *Session, what string, err error) {
	if errors.Is(err, store.ErrNotFound) {
		h.notFound(w, r, s)
		return
	}
	h.failed(w, r, s, what, err)
}

// rotateWebhook serves POST /webhooks/{id}/rotate: the new secret is in
// this one answer; the old one signs too for a day.
func (h *Handler) rotateWebhook(w http.ResponseWriter, r *http.Request, s *Session) {
	if !h.webhookForm(w, r, s) {
		return
	}
	e, err := h.ownWebhook(r, s)
	if err == nil {
		e, err = h.Webhooks.Rotate(r.Context(), e.ID)
	}
	if err != nil {
		h.webhookError(w, r, s, "rotating webhook secret", err)
		return
	}
	h.record(r.Context(), s, "webhook_rotated", e.URL)
	h.showWebhooks(w, r, s, http.StatusOK, webhooksData{Created: e.Secret, CreatedFor: e.URL})
}

// deleteWebhook serves POST /webhooks/{id}/delete.
func (h *Handler) deleteWebhook(w http.ResponseWriter, r *http.Request, s *Session) {
	if !h.webhookForm(w, r, s) {
		return
	}
	e, err := h.ownWebhook(r, s)
	if err == nil {
		err = h.Webhooks.Delete(r.Context(), e.ID)
	}
	if err != nil {
		h.webhookError(w, r, s, "deleting webhook", err)
		return
	}
	h.record(r.Context(), s, "webhook_deleted", e.URL)
	http.Redirect(w, r, h.link("webhooks"), http.StatusSeeOther)
}

// testWebhook serves POST /webhooks/{id}/test: a webhook.test delivery.
func (h *Handler) testWebhook(w http.ResponseWriter, r *http.Request, s *Session) {
	if !h.webhookForm(w, r, s) {
		return
	}
	e, err := h.ownWebhook(r, s)
	if err == nil {
		_, err = h.Webhooks.SendTest(r.Context(), e.ID)
	}
	if errors.Is(err, webhooks.ErrDisabled) {
		h.showWebhooks(w, r, s, http.StatusConflict, webhooksData{Error: e.URL + ": " + err.Error()})
		return
	}
	if err != nil {
		h.webhookError(w, r, s, "sending test event", err)
		return
	}
	http.Redirect(w, r, h.link("webhooks#deliveries"), http.StatusSeeOther)
}

// resendDelivery serves POST /webhooks/deliveries/{id}/resend.
func (h *Handler) resendDelivery(w http.ResponseWriter, r *http.Request, s *Session) {
	if !h.webhookForm(w, r, s) {
		return
	}
	d, err := h.Webhooks.Delivery(r.Context(), r.PathValue("id"))
	if err == nil && d.AccountID != s.AccountID {
		err = store.ErrNotFound
	}
	if err == nil {
		_, err = h.Webhooks.Resend(r.Context(), d.ID)
	}
	if err != nil {
		h.webhookError(w, r, s, "resending delivery", err)
		return
	}
	http.Redirect(w, r, h.link("webhooks#deliveries"), http.StatusSeeOther)
}
