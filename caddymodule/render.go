package caddymodule

import (
	"net/http"

	"socialrouter/caddymodule/store"
)

// writeRun answers a run, encoding it once: the header through
// encoding/json, the records appended as they are.
func writeRun(w http.ResponseWriter, run *store.Run) {
	hdr := *run
	hdr.Data = nil
	out, err := store.AppendRunJSON(nil, &hdr, run.Data)
	if err != nil {
		writeJSON(w, http.StatusOK, run)
		return
	}
	writeRaw(w, http.StatusOK, out)
}
