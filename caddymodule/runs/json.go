package runs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"socialrouter/internal/jsonscan"
)

// headBufs holds the buffers run headers are encoded into; package-level
// because it holds only free buffers, no config state.
var headBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// AppendJSON appends the JSON of head, a run (or a struct embedding
// one) whose Data is nil, with records spliced in as its "data" array.
// Records are JSON our normalizers produced; json.Marshal would validate
// and compact every one of them again, which on a 10-record run costs more
// than normalizing them did. HTML characters are not escaped.
func AppendJSON(dst []byte, head any, records []json.RawMessage) ([]byte, error) {
	buf := headBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			headBufs.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(head); err != nil {
		return dst, err
	}
	h := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	start, end, ok := nullMember(h, "data")
	if !ok {
		return dst, fmt.Errorf("encoding run: no data member in %T", head)
	}
	size := len(h) + 2
	for _, d := range records {
		size += len(d) + 1
	}
	if cap(dst)-len(dst) < size {
		dst = append(make([]byte, 0, len(dst)+size), dst...)
	}
	dst = append(dst, h[:start]...)
	dst = append(dst, '[')
	for j, d := range records {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, d...)
	}
	dst = append(dst, ']')
	return append(dst, h[end:]...), nil
}

// nullMember finds the top-level member key of the JSON object h whose
// value is null, and returns where that value starts and ends.
func nullMember(h []byte, key string) (start, end int, ok bool) {
	s := jsonscan.Bytes(h)
	if !strings.HasPrefix(s, "{") {
		return 0, 0, false
	}
	for i := 1; ; {
		k, v, next, ok := jsonscan.NextMember(s, i)
		if !ok {
			return 0, 0, false
		}
		if k == key && v == "null" {
			return next - len(v), next, true
		}
		i = next
	}
}
