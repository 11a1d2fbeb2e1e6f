package api

import (
	"net/http"

	"socialrouter/caddymodule/runs"
	"socialrouter/internal/httpjson"
)

// runBufs holds the buffers runs are answered from (stored runs read by
// GET /v1/extractions/{id}, runs encoded by writeRun, the documents a
// settle hands back): a fresh buffer per look-up made the garbage
// collector that route's largest cost. It is the stores' pool
// (runs.DocBufs), so a settle's buffer returns to it once the answer is
// written; it holds only free buffers, no config or account state.
var runBufs = &runs.DocBufs

// writeSettled answers a settled run: answer, the bytes the store wrote
// (store.Settlement.Answer), when it handed them back, else the run
// encoded (writeRun). answer goes back to runBufs.
func writeSettled(w http.ResponseWriter, run *runs.Run, answer []byte) {
	if answer == nil {
		writeRun(w, run)
		return
	}
	writeRaw(w, http.StatusOK, answer)
	runBufs.Put(&answer)
}

// writeRun answers a run, encoding it once: the header through
// encoding/json, the records appended as they are, into a pooled buffer
// (runBufs) that is free again once the answer is written.
func writeRun(w http.ResponseWriter, run *runs.Run) {
	size := 1 << 10 // the run's header, then its records
	for _, r := range run.Data {
		size += len(r) + 1
	}
	buf := runBufs.Get(size)
	defer runBufs.Put(buf)
	out, err := AppendRun((*buf)[:0], run)
	*buf = out
	if err != nil {
		writeJSON(w, http.StatusOK, run)
		return
	}
	writeRaw(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

func writeRaw(w http.ResponseWriter, status int, b []byte) { httpjson.WriteRaw(w, status, b) }
