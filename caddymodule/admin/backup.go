package admin

import (
	"net/http"
	"strconv"

	"socialrouter/caddymodule/store"
)

// BackupVersionTrailer is the HTTP trailer of GET /sdr/backup: the version
// to pass as ?since= to the next, incremental, backup. It is a trailer
// because it is known only once the stream is written.
const BackupVersionTrailer = "Sdr-Backup-Next-Since"

// backup serves GET /sdr/backup[?since=<version>]: the store's backup
// stream (badger's), of one consistent snapshot, taken while the gateway
// serves. since (default 0: everything) is the version a previous backup
// announced in its trailer: only what was written since is streamed.
func (h *Handler) backup(w http.ResponseWriter, r *http.Request) error {
	var since uint64
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return apiErr(http.StatusBadRequest, "since must be a version a previous backup announced (a non-negative integer), got %q", v)
		}
		since = n
	}
	b := h.Store.Capabilities().Backup
	if b == nil {
		return apiErr(http.StatusNotImplemented, "%v", store.ErrNoBackup)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Trailer", BackupVersionTrailer)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	next, err := b.Backup(r.Context(), w, since)
	if err != nil {
		// The status is sent: the client sees the stream end without its
		// trailer and must not trust it (caddy sdr backup fails).
		return nil
	}
	w.Header().Set(BackupVersionTrailer, strconv.FormatUint(next, 10))
	return nil
}
