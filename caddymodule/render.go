package caddymodule

import (
	"net/http"
	"socialrouter/caddymodule/runs"
)

// writeRun answers a run, encoding it once: the header through
// encoding/json, the records appended as they are, into a pooled buffer
// (runBufs) that is free again once the answer is written.
func writeRun(w http.ResponseWriter, run *runs.Run) {
	hdr := *run
	hdr.Data = nil
	buf := runBufs.Get(0)
	defer runBufs.Put(buf)
	out, err := runs.AppendJSON((*buf)[:0], &hdr, run.Data)
	*buf = out
	if err != nil {
		writeJSON(w, http.StatusOK, run)
		return
	}
	writeRaw(w, http.StatusOK, out)
}
