package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"github.com/tidwall/gjson"

	"socialrouter/internal/upstreamitem"
)

// fixture is one fixture file split into compact data and error items.
type fixture struct {
	data [][]byte
	errs [][]byte
}

// fixture loads and caches one fixture file, split into data and error
// items, each compacted.
func (s *Sim) fixture(path string) (*fixture, error) {
	s.mu.Lock()
	f, ok := s.cache[path]
	s.mu.Unlock()
	if ok {
		return f, nil
	}
	data, err := fs.ReadFile(s.fsys, path)
	if err != nil {
		return nil, fmt.Errorf("reading fixture: %w", err)
	}
	if !gjson.ValidBytes(data) || !gjson.ParseBytes(data).IsArray() {
		return nil, fmt.Errorf("fixture %s is not a JSON array", path)
	}
	f = &fixture{}
	var cerr error
	gjson.ParseBytes(data).ForEach(func(_, v gjson.Result) bool {
		var buf bytes.Buffer
		if cerr = json.Compact(&buf, []byte(v.Raw)); cerr != nil {
			return false
		}
		if isErrorItem(v) {
			f.errs = append(f.errs, buf.Bytes())
		} else {
			f.data = append(f.data, buf.Bytes())
		}
		return true
	})
	if cerr != nil {
		return nil, fmt.Errorf("compacting fixture %s: %w", path, cerr)
	}
	if len(f.data) == 0 && len(f.errs) == 0 {
		return nil, fmt.Errorf("fixture %s has no items", path)
	}
	s.mu.Lock()
	s.cache[path] = f
	s.mu.Unlock()
	return f, nil
}

// rowsFor are the rows of a dataset example that answer input, the i-th
// of a request: the data and error rows whose own input names it, if any
// does; else every data row when the example's rows answer one input (the
// comments of one post); else, the rows answering different inputs, one
// data row in turn (an input the example does not know gets one record).
// An example of error rows only answers every input with them.
func (f *fixture) rowsFor(input string, i int) (data, errs [][]byte) {
	for _, d := range f.data {
		if rowInput(d) == input {
			data = append(data, d)
		}
	}
	for _, e := range f.errs {
		if rowInput(e) == input {
			errs = append(errs, e)
		}
	}
	switch {
	case len(data)+len(errs) > 0:
		return data, errs
	case len(f.data) == 0:
		return nil, f.errs
	}
	one := map[string]bool{}
	for _, d := range f.data {
		one[rowInput(d)] = true
	}
	if len(one) == 1 {
		return f.data, nil
	}
	return [][]byte{f.data[i%len(f.data)]}, nil
}

// rowInput is the input an upstream row answers: its input's url (or the
// input itself, a string), "" when it names none.
func rowInput(row []byte) string {
	in := gjson.GetBytes(row, "input")
	if !in.Exists() {
		return ""
	}
	return inputText(in)
}

// isErrorItem mirrors the client's rule: a top-level non-null error,
// error_code or warning_code makes a per-input error record.
func isErrorItem(v gjson.Result) bool {
	if !v.IsObject() {
		return false
	}
	for _, k := range []string{"error", "error_code", "warning_code"} {
		if r := v.Get(k); r.Exists() && r.Type != gjson.Null {
			return true
		}
	}
	return false
}

func joinArray(items [][]byte) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// setInput returns a copy of item whose top-level "input" is input, so a
// record can be matched to the input it answers.
var setInput = upstreamitem.SetInput

// errorRecord is a per-input error record for input: the fixture's own
// template when it has one, else a dead_page record.
func errorRecord(tmpl, input []byte) []byte {
	if input == nil {
		input = []byte("null")
	}
	if tmpl != nil {
		return setInput(tmpl, input)
	}
	ts, _ := json.Marshal(time.Now().UTC().Format(time.RFC3339))
	out := []byte(`{"timestamp":`)
	out = append(out, ts...)
	out = append(out, `,"input":`...)
	out = append(out, input...)
	return append(out, `,"error":"simulated: page could not be collected","error_code":"dead_page"}`...)
}
