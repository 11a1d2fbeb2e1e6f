package api

import (
	"net/http"

	"socialrouter/caddymodule/runs"
	"socialrouter/internal/bufpool"
	"socialrouter/internal/httpjson"
)

// runBufs holds the buffers runs are answered from (stored runs read by
// GET /v1/extractions/{id}, runs encoded by writeRun): a fresh buffer per
// look-up made the garbage collector that route's largest cost. It is
// package-level because it holds only free buffers, no config or account
// state, so every config generation can share it.
var runBufs bufpool.Pool

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
