// Package openapitest checks HTTP exchanges against the gateway's served
// OpenAPI 3.1 document, for unit and end-to-end tests of other packages.
//
// Validation uses github.com/pb33f/libopenapi-validator: the operation is
// found from the request's method and path, the response status must be
// documented for it, and the body (and required headers) must match the
// documented response. The canonical extract path
// /v1/extract/{platform}/{service} is checked against the operation of its
// alias /v1/{platform}/{service}, the form the document lists. An error
// answered on a path or method the document does not list (an unknown
// platform or service, a wrong method) must still be the Error envelope.
package openapitest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// ValidateResponse fails t when resp (whose body was read into body) is not
// a response the document describes for req: undocumented path, method or
// status, a content type other than the documented one, or a body or
// required header that does not match the schema. A per-IP rate-limit
// refusal (429 with no body) is accepted as documented, and an error status
// on an undocumented path or method (unknown platform or service, wrong
// method) is checked against the Error schema alone.
func ValidateResponse(t testing.TB, doc []byte, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if err := CheckResponse(doc, req, resp, body); err != nil {
		t.Errorf("%s %s → %d: response does not match the OpenAPI document:\n%v\nbody: %s",
			req.Method, req.URL.Path, resp.StatusCode, err, abbreviate(body))
	}
}

// CheckResponse is ValidateResponse returning the problems as an error
// (nil when the response matches).
func CheckResponse(doc []byte, req *http.Request, resp *http.Response, body []byte) error {
	v, err := validatorFor(doc)
	if err != nil {
		return err
	}
	r := aliasRequest(req, nil)
	if resp.StatusCode == http.StatusTooManyRequests && len(bytes.TrimSpace(body)) == 0 {
		// The per-IP refusal has no JSON body; the status must still be
		// documented for the operation.
		body = []byte(`{"error":{"code":"rate_limited","message":"per-IP rate limit","type":"rate_limit"}}`)
		h := resp.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Set("Content-Type", "application/json")
		resp = &http.Response{StatusCode: resp.StatusCode, Header: h}
	}
	clone := &http.Response{
		Status:     resp.Status,
		StatusCode: resp.StatusCode,
		Header:     resp.Header.Clone(),
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    r,
	}
	if clone.Header == nil {
		clone.Header = http.Header{}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	ok, errs := v.v.ValidateHttpResponse(r, clone)
	if ok {
		return nil
	}
	if resp.StatusCode >= 400 && onlyPathErrors(errs) && v.errorSchema != nil {
		return v.checkErrorEnvelope(resp, body)
	}
	return describe(errs)
}

// onlyPathErrors reports whether the request's path or method is not in
// the document (and nothing else went wrong).
func onlyPathErrors(errs []*valerrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationType != helpers.PathValidation {
			return false
		}
	}
	return len(errs) > 0
}

// checkErrorEnvelope validates an error answered outside the documented
// operations against the Error schema.
func (v *cachedValidator) checkErrorEnvelope(resp *http.Response, body []byte) error {
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(strings.ToLower(ct), "json") {
		return fmt.Errorf("- an error on an undocumented path or method must be JSON (the Error envelope), got Content-Type %q", ct)
	}
	ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytesWithVersion(v.errorSchema, body, 3.1)
	if ok {
		return nil
	}
	return describe(errs)
}

// CheckRequest returns what makes req with the given body a request the
// document does not accept (path, parameters, security and body schema),
// nil when it matches.
func CheckRequest(doc []byte, req *http.Request, body []byte) error {
	v, err := validatorFor(doc)
	if err != nil {
		return err
	}
	r := aliasRequest(req, body)
	v.mu.Lock()
	ok, errs := v.v.ValidateHttpRequestSync(r)
	v.mu.Unlock()
	if ok {
		return nil
	}
	return describe(errs)
}

// CheckDocument validates doc against the OpenAPI 3.1 specification and
// checks that every reference resolves.
func CheckDocument(doc []byte) error {
	v, err := validatorFor(doc)
	if err != nil {
		return err
	}
	v.mu.Lock()
	ok, errs := v.v.ValidateDocument()
	v.mu.Unlock()
	if ok {
		return nil
	}
	return describe(errs)
}

// aliasRequest copies req with the canonical extract path rewritten to its
// documented alias, and with body as its body.
func aliasRequest(req *http.Request, body []byte) *http.Request {
	r := req.Clone(req.Context())
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/extract/"); ok {
		r.URL.Path = "/v1/" + rest
		r.URL.RawPath = ""
	}
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	} else {
		r.Body = http.NoBody
	}
	return r
}

type cachedValidator struct {
	mu sync.Mutex
	v  validator.Validator
	// errorSchema is components.schemas.Error.
	errorSchema *base.Schema
}

var (
	cacheMu sync.Mutex
	cache   = map[[32]byte]*cachedValidator{}
	errsFor = map[[32]byte]error{}
)

// validatorFor builds (once per distinct document) the validator of doc.
func validatorFor(doc []byte) (*cachedValidator, error) {
	key := sha256.Sum256(doc)
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if v, ok := cache[key]; ok {
		return v, nil
	}
	if err, ok := errsFor[key]; ok {
		return nil, err
	}
	v, err := build(doc)
	if err != nil {
		errsFor[key] = err
		return nil, err
	}
	cache[key] = v
	return v, nil
}

func build(doc []byte) (*cachedValidator, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("parsing the OpenAPI document: %v", err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI model: %v", err)
	}
	v := validator.NewValidatorFromV3Model(&m.Model, config.WithFormatAssertions())
	v.SetDocument(d)
	cv := &cachedValidator{v: v}
	if c := m.Model.Components; c != nil && c.Schemas != nil {
		if p := c.Schemas.GetOrZero("Error"); p != nil {
			cv.errorSchema = p.Schema()
		}
	}
	return cv, nil
}

// describe renders validation errors, one per line, with the schema
// failures beneath each.
func describe(errs []*valerrors.ValidationError) error {
	if len(errs) == 0 {
		return errors.New("invalid (no detail given)")
	}
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "- %s", e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			fmt.Fprintf(&b, ": %s", e.Reason)
		}
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    %s", f.Reason)
			if f.FieldPath != "" {
				fmt.Fprintf(&b, " at %s", f.FieldPath)
			} else if f.KeywordLocation != "" {
				fmt.Fprintf(&b, " (%s)", f.KeywordLocation)
			}
		}
	}
	return errors.New(b.String())
}

func abbreviate(b []byte) string {
	const n = 2000
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
