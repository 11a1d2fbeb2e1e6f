package admin

import (
	"net/http"
	"strings"

	"socialrouter/internal/httpjson"
)

// cacheRoutes registers the freshness cache's routes (issue 36):
//
//	GET  /sdr/cache/stats                   entries and bytes by service, hits, misses, joins
//	POST /sdr/cache/purge[?service=<p>/<s>] deletes the entries of one service, or all
//
// Entries are rebuildable: a purge costs later calls live work, nothing else.
func (h *Handler) cacheRoutes() {
	h.route("/sdr/cache/stats", h.cacheStats, http.MethodGet)
	h.route("/sdr/cache/purge", h.cachePurge, http.MethodPost)
}

func (h *Handler) cacheStats(w http.ResponseWriter, r *http.Request) error {
	if h.Cache == nil {
		return apiErr(http.StatusNotFound, "this store keeps no cache")
	}
	st, err := h.Cache.Stats(r.Context())
	if err != nil {
		return apiErr(http.StatusServiceUnavailable, "reading the cache: %v", err)
	}
	httpjson.Write(w, http.StatusOK, st)
	return nil
}

func (h *Handler) cachePurge(w http.ResponseWriter, r *http.Request) error {
	if h.Cache == nil {
		return apiErr(http.StatusNotFound, "this store keeps no cache")
	}
	svc := r.URL.Query().Get("service")
	if svc != "" {
		platform, name, _ := strings.Cut(svc, "/")
		if _, ok := h.Registry.Service(platform, name); !ok {
			return apiErr(http.StatusNotFound, "no service %q; name it <platform>/<service>", svc)
		}
	}
	n, err := h.Cache.Purge(r.Context(), svc)
	if err != nil {
		return apiErr(http.StatusServiceUnavailable, "purging the cache: %v", err)
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"service": svc, "deleted": n})
	return nil
}
