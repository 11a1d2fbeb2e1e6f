package dashboard

import (
	"encoding/json"
	"net/http"

	"socialrouter/caddymodule/registry"
)

// catalogue decodes the registry's catalogue (GET /v1/services), so the
// page shows exactly what the API lists.
func catalogue(reg *registry.Registry) []registry.CatalogueEntry {
	var doc struct {
		Data []registry.CatalogueEntry `json:"data"`
	}
	if err := json.Unmarshal(reg.CatalogueJSON(), &doc); err != nil {
		return nil
	}
	return doc.Data
}

// servicesPage serves GET /services: every callable service with its
// accepted inputs, options and live offers' prices.
func (h *Handler) servicesPage(w http.ResponseWriter, r *http.Request, s *Session) {
	var entries []registry.CatalogueEntry
	if reg := h.Registry(); reg != nil {
		entries = catalogue(reg)
	}
	h.render(w, http.StatusOK, "services", s, view{Title: "Services", Nav: "services", Data: entries})
}

// referencePage serves GET /reference: the API reference, rendered in the
// browser by the vendored Redoc from the dashboard's copy of the OpenAPI
// document.
func (h *Handler) referencePage(w http.ResponseWriter, r *http.Request, s *Session) {
	h.render(w, http.StatusOK, "reference", s, view{Title: "API reference", Nav: "reference"})
}

// openapi serves GET /openapi.json, the document of GET /v1/openapi.json.
func (h *Handler) openapi(w http.ResponseWriter, r *http.Request, s *Session) {
	reg := h.Registry()
	if reg == nil {
		h.notFound(w, r, s)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(reg.OpenAPIJSON())
}
