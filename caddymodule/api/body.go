package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"socialrouter/caddymodule/limits"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"socialrouter/caddymodule/registry"
	"socialrouter/internal/jsonscan"
)

// maxBody is the largest request body accepted (413 request_too_large).
const maxBody = limits.BodyMax

// extractFields are the only top-level keys of an extract body.
var extractFields = []string{"urls", "url", "queries", "query", "provider", "limit", "options"}

// extractBody is a parsed and validated extract request.
type extractBody struct {
	// Raw are the inputs as sent (a query-kind run echoes them).
	Raw     []string
	Inputs  []string
	Options map[string]any
	Limit   int
	Pin     *registry.Offer
}

// readObject reads a JSON object body of at most maxBody bytes.
func readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, *Error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, newError(http.StatusRequestEntityTooLarge, "request_too_large", typeValidation,
				fmt.Sprintf("the request body exceeds %d bytes; send fewer inputs per call", maxBody))
		}
		return nil, newError(http.StatusBadRequest, "invalid_body", typeValidation, "reading the request body failed: "+err.Error())
	}
	return parseObject(b)
}

// parseObject decodes a JSON object, refusing anything else, duplicated
// keys included (encoding/json would keep the last).
func parseObject(b []byte) (map[string]json.RawMessage, *Error) {
	b = bytes.TrimSpace(b)
	if m, ok := parseChecked(b); ok {
		return m, nil
	}
	return parseDecoded(b)
}

// parseDecoded is parseObject with encoding/json, for any body.
func parseDecoded(b []byte) (map[string]json.RawMessage, *Error) {
	if len(b) == 0 {
		return nil, newError(http.StatusBadRequest, "invalid_json", typeValidation,
			`the request body is empty; send a JSON object such as {"urls": ["…"]}`)
	}
	if !utf8.Valid(b) {
		// encoding/json would turn each bad byte into U+FFFD and the
		// corrupted text would be routed, sent upstream and billed.
		return nil, newError(http.StatusBadRequest, "invalid_json", typeValidation,
			"the request body is not valid UTF-8: JSON text must be encoded in UTF-8")
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, newError(http.StatusBadRequest, "invalid_json", typeValidation,
			"the request body must be a JSON object: "+jsonProblem(err))
	}
	if dec.More() {
		return nil, newError(http.StatusBadRequest, "invalid_json", typeValidation,
			"the request body must be exactly one JSON object")
	}
	if k, dup := jsonscan.FindDuplicate(b); dup {
		return nil, newError(http.StatusBadRequest, "invalid_json", typeValidation,
			fmt.Sprintf("the request body repeats the key %q; send each key once", k))
	}
	return m, nil
}

// parseChecked is parseObject for the common body, an object jsonscan's
// strict check accepts (so without a repeated key): its members are read in one pass,
// without encoding/json's decoder. Any other body takes the slower path,
// which finds the words of its refusal.
func parseChecked(b []byte) (map[string]json.RawMessage, bool) {
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	m := make(map[string]json.RawMessage, 4)
	ok := jsonscan.IsObject(jsonscan.Bytes(b), func(k, v string) { m[k] = json.RawMessage(v) })
	return m, ok
}

// jsonString decodes raw, one JSON value, as json.Unmarshal into a string
// would, except that null is no string (encoding/json leaves "" and says
// nothing). A plain string (jsonscan.IsPlainString: nearly every input) is
// its bytes between the quotes; anything else is left to encoding/json.
func jsonString(raw json.RawMessage) (string, bool) {
	if s := jsonscan.Bytes(raw); jsonscan.IsPlainString(s) {
		return strings.Clone(s[1 : len(s)-1]), true
	}
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil || s == nil {
		return "", false
	}
	return *s, true
}

// jsonStrings decodes raw as json.Unmarshal into a []string would, except
// that a null entry is no string (encoding/json would read it as ""): an
// array of plain strings is read here, anything else by encoding/json
// (null gives a nil slice, [] an empty one).
func jsonStrings(raw json.RawMessage) ([]string, bool) {
	if out, ok := plainStrings(jsonscan.TrimSpace(jsonscan.Bytes(raw))); ok {
		return out, true
	}
	var ptrs []*string
	if err := json.Unmarshal(raw, &ptrs); err != nil {
		return nil, false
	}
	if ptrs == nil {
		return nil, true
	}
	out := make([]string, len(ptrs))
	for i, p := range ptrs {
		if p == nil {
			return nil, false
		}
		out[i] = *p
	}
	return out, true
}

// plainStrings reads s when it is exactly a JSON array of plain strings.
func plainStrings(s string) ([]string, bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	out := []string{}
	rest := jsonscan.TrimSpace(s[1 : len(s)-1])
	for len(rest) > 0 {
		end := strings.IndexByte(rest[1:], '"') + 2 // past the closing quote
		if end < 2 || !jsonscan.IsPlainString(rest[:end]) {
			return nil, false
		}
		out = append(out, strings.Clone(rest[1:end-1]))
		if rest = jsonscan.TrimSpace(rest[end:]); len(rest) == 0 {
			break
		}
		if rest[0] != ',' {
			return nil, false
		}
		if rest = jsonscan.TrimSpace(rest[1:]); len(rest) == 0 {
			return nil, false // a trailing comma
		}
	}
	return out, true
}

// jsonNumber decodes raw as json.Unmarshal into a float64 would: a JSON
// number is parsed by strconv as encoding/json does, anything else is
// left to it.
func jsonNumber(raw json.RawMessage) (float64, bool) {
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') && jsonscan.IsNumber(jsonscan.Bytes(raw)) {
		f, err := strconv.ParseFloat(string(raw), 64)
		return f, err == nil
	}
	var f float64
	err := json.Unmarshal(raw, &f)
	return f, err == nil
}

// jsonProblem words a decoding error for the caller, without the Go type
// names encoding/json puts in its messages.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case err == nil:
		return "got null"
	case errors.As(err, &typeErr):
		return "got " + jsonKind(typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("%s (at byte %d)", syntaxErr.Error(), syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON text ends too early"
	}
	return err.Error()
}

// jsonKind names a JSON value kind as json.UnmarshalTypeError reports it
// ("array", "string", "number", "bool") with an article.
func jsonKind(v string) string {
	switch {
	case v == "array":
		return "an array"
	case v == "bool":
		return "a boolean"
	case strings.HasPrefix(v, "number"):
		return "a number"
	case v == "":
		return "another JSON value"
	}
	return "a " + v
}

// parseExtract validates an extract body against the service, before any
// routing or billing, with the synchronous limit.
func parseExtract(svc *registry.Service, m map[string]json.RawMessage) (*extractBody, *Error) {
	return parseExtractLimit(svc, m, limits.ExtractLimitMax)
}

// parseExtractLimit is parseExtract with limit up to maxLimit.
func parseExtractLimit(svc *registry.Service, m map[string]json.RawMessage, maxLimit int) (*extractBody, *Error) {
	if apiErr := checkFields(m, extractFields); apiErr != nil {
		return nil, apiErr
	}
	// An explicit null means "not given" for the optional fields.
	for _, k := range []string{"provider", "limit", "options"} {
		if string(bytes.TrimSpace(m[k])) == "null" {
			delete(m, k)
		}
	}

	field, single := svc.InputField(), svc.SingleInputField()
	wrongField, wrongSingle := "queries", "query"
	if svc.InputKind == registry.KindQuery {
		wrongField, wrongSingle = "urls", "url"
	}
	for _, k := range []string{wrongField, wrongSingle} {
		if _, ok := m[k]; ok {
			return nil, newError(http.StatusBadRequest, "wrong_input_field", typeValidation,
				fmt.Sprintf("%s is a %s-kind service: send %s (array) or %s (string), not %s", svc.Key, svc.InputKind, field, single, k)).
				with("input_field", field)
		}
	}

	out := &extractBody{Limit: 100}
	arr, hasArr := m[field]
	one, hasOne := m[single]
	switch {
	case hasArr && hasOne:
		return nil, newError(http.StatusBadRequest, "conflicting_input", typeValidation,
			fmt.Sprintf("send either %s or %s, not both", field, single))
	case hasArr:
		var ok bool
		if out.Inputs, ok = jsonStrings(arr); !ok || out.Inputs == nil {
			return nil, newError(http.StatusBadRequest, "invalid_field", typeValidation,
				fmt.Sprintf("%s must be an array of strings", field))
		}
		if len(out.Inputs) == 0 {
			return nil, newError(http.StatusBadRequest, "missing_input", typeValidation,
				fmt.Sprintf("%s must hold at least one entry", field))
		}
	case hasOne:
		s, ok := jsonString(one)
		if !ok {
			return nil, newError(http.StatusBadRequest, "invalid_field", typeValidation,
				fmt.Sprintf("%s must be a string", single))
		}
		out.Inputs = []string{s}
	default:
		return nil, newError(http.StatusBadRequest, "missing_input", typeValidation,
			fmt.Sprintf("send the inputs as %s (array of strings) or %s (string)", field, single)).with("input_field", field)
	}

	if raw, ok := m["limit"]; ok {
		f, ok := jsonNumber(raw)
		if !ok || f != float64(int(f)) || f < 1 || f > float64(maxLimit) {
			msg := fmt.Sprintf("limit must be an integer from 1 to %d (default %d)", maxLimit, limits.LimitDefault)
			if maxLimit < limits.AsyncLimitMax {
				msg += fmt.Sprintf("; up to %d with Prefer: respond-async", limits.AsyncLimitMax)
			}
			return nil, newError(http.StatusBadRequest, "invalid_limit", typeValidation, msg)
		}
		out.Limit = int(f)
	}

	maxInputs := 0
	for _, o := range svc.LiveOffers() {
		maxInputs = max(maxInputs, o.MaxInputs)
	}
	if raw, ok := m["provider"]; ok {
		var id string
		_ = json.Unmarshal(raw, &id)
		o, found := svc.Offer(id)
		if !found || !o.Live() {
			avail := []string{}
			for _, lo := range svc.LiveOffers() {
				avail = append(avail, lo.ID)
			}
			return nil, newError(http.StatusBadRequest, "unknown_offer", typeValidation,
				fmt.Sprintf("provider %s does not serve %s; available offers: %s", string(raw), svc.Key, strings.Join(avail, ", "))).
				with("available_offers", avail)
		}
		out.Pin = o
		maxInputs = o.MaxInputs
	}
	if len(out.Inputs) > maxInputs {
		return nil, newError(http.StatusBadRequest, "too_many_inputs", typeValidation,
			fmt.Sprintf("%d inputs sent; %s takes at most %d per call: split them into several calls", len(out.Inputs), svc.Key, maxInputs)).
			with("max_inputs", maxInputs)
	}

	out.Raw = append([]string(nil), out.Inputs...)
	inputs, apiErr := matchInputs(svc, out.Inputs)
	if apiErr != nil {
		return nil, apiErr
	}
	out.Inputs = inputs

	var opts map[string]json.RawMessage
	if raw, ok := m["options"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &opts); err != nil {
			return nil, optionError(svc, "options must be a JSON object", nil)
		}
	}
	vals, problems := svc.ValidateOptions(opts)
	if len(problems) > 0 {
		var parts []string
		for _, p := range problems {
			parts = append(parts, p.Name+": "+p.Problem)
		}
		return nil, optionError(svc, "invalid options ("+strings.Join(parts, "; ")+")", problems)
	}
	out.Options = vals
	return out, nil
}

// matchInputs normalizes every input against the service's accepted
// formats, or refuses them all with invalid_input_format listing each bad
// input (index and value) and the accepted formats with examples.
func matchInputs(svc *registry.Service, inputs []string) ([]string, *Error) {
	out := make([]string, len(inputs))
	var bad []map[string]any
	var shown []string
	maxLen := svc.MaxInputLength()
	for i, in := range inputs {
		n, ok := svc.MatchInput(in)
		if !ok {
			entry := map[string]any{"index": i, "input": in}
			q := fmt.Sprintf("%q", in)
			if maxLen > 0 && utf8.RuneCountInString(strings.TrimSpace(in)) > maxLen {
				entry["problem"] = fmt.Sprintf("longer than %d characters", maxLen)
				q += fmt.Sprintf(" (longer than %d characters)", maxLen)
			}
			bad = append(bad, entry)
			shown = append(shown, q)
			continue
		}
		out[i] = n
	}
	if len(bad) == 0 {
		return out, nil
	}
	formats := []map[string]string{}
	var fs []string
	for _, a := range svc.Accepts {
		f := map[string]string{"format": a.Format, "example": a.Example}
		if a.Note != "" {
			f["note"] = a.Note
		}
		formats = append(formats, f)
		fs = append(fs, fmt.Sprintf("%s (e.g. %s)", a.Format, a.Example))
	}
	return nil, newError(http.StatusBadRequest, "invalid_input_format", typeValidation,
		fmt.Sprintf("%d input(s) do not match an accepted format of %s: %s; accepted: %s",
			len(bad), svc.Key, strings.Join(shown, ", "), strings.Join(fs, "; "))).
		with("invalid_inputs", bad).with("accepts", formats)
}

func optionError(svc *registry.Service, msg string, problems []registry.OptionProblem) *Error {
	valid := []map[string]any{}
	var names []string
	for _, o := range svc.Options {
		v := map[string]any{"name": o.Name, "type": o.Type, "expects": o.Expect()}
		if len(o.Values) > 0 {
			v["values"] = o.Values
		}
		valid = append(valid, v)
		names = append(names, o.Name+" ("+o.Expect()+")")
	}
	if len(names) == 0 {
		msg += "; " + svc.Key + " declares no options: remove the options object"
	} else {
		msg += "; valid options: " + strings.Join(names, ", ")
	}
	e := newError(http.StatusBadRequest, "invalid_option", typeValidation, msg).with("valid_options", valid)
	if problems != nil {
		e.with("invalid_options", problems)
	}
	return e
}

// checkFields refuses top-level keys outside allowed with unknown_field.
func checkFields(m map[string]json.RawMessage, allowed []string) *Error {
	var unknown []string
	for k := range m {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return newError(http.StatusBadRequest, "unknown_field", typeValidation,
		fmt.Sprintf("unknown field(s) %s; allowed fields: %s", quoteList(unknown), strings.Join(allowed, ", "))).
		with("unknown_fields", unknown).with("allowed_fields", allowed)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
