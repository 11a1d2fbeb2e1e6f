package caddymodule

import (
	"bytes"
	"encoding/json"
	"net/http"

	"socialrouter/caddymodule/store"
)

// dataNull is where the records go in a run rendered without them: keys are
// rendered unescaped only at structure positions, so the sequence cannot
// occur inside a string value.
var dataNull = []byte(`,"data":null,`)

// writeRun answers a run, encoding it once: the header through
// encoding/json, the records appended as they are (they are JSON our
// normalizers produced, so validating and compacting them again would only
// cost time).
func writeRun(w http.ResponseWriter, run *store.Run) {
	data := run.Data
	hdr := *run
	hdr.Data = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&hdr); err != nil {
		writeJSON(w, http.StatusOK, run)
		return
	}
	head := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	i := bytes.Index(head, dataNull)
	if i < 0 {
		writeJSON(w, http.StatusOK, run)
		return
	}
	size := len(head) + 2
	for _, d := range data {
		size += len(d) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, head[:i]...)
	out = append(out, `,"data":[`...)
	for j, d := range data {
		if j > 0 {
			out = append(out, ',')
		}
		out = append(out, d...)
	}
	out = append(out, "],"...)
	out = append(out, head[i+len(dataNull):]...)
	writeRaw(w, http.StatusOK, out)
}
