package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Generated file paths, relative to the repository root.
const (
	docFile      = "sdk/openapi.json"
	goTypesFile  = "sdk/go/types_gen.go"
	goCallsFile  = "sdk/go/services_gen.go"
	tsCallsFile  = "sdk/typescript/src/services.gen.ts"
	schemaPrefix = "#/components/schemas/"
)

// Generate renders every generated file of sdk/ from the OpenAPI document.
func Generate(doc []byte) (map[string][]byte, error) {
	var d document
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("decoding the OpenAPI document: %w", err)
	}
	svcs, err := d.services()
	if err != nil {
		return nil, err
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "  "); err != nil {
		return nil, err
	}
	pretty.WriteByte('\n')
	goTypes, err := goTypesSource(d)
	if err != nil {
		return nil, err
	}
	goCalls, err := goCallsSource(svcs)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		docFile:     pretty.Bytes(),
		goTypesFile: goTypes,
		goCallsFile: goCalls,
		tsCallsFile: tsCallsSource(svcs),
	}, nil
}

// document is the part of the OpenAPI document the generator reads.
type document struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

// schema is the JSON Schema subset the document uses.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 any                `json:"type"` // a name or a list of names
	Description          string             `json:"description"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	Items                *schema            `json:"items"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	AnyOf                []*schema          `json:"anyOf"`
	OneOf                []*schema          `json:"oneOf"`
	AllOf                []*schema          `json:"allOf"`
	Enum                 []any              `json:"enum"`
	Const                any                `json:"const"`
}

// operation is the part of an operation the generator reads.
type operation struct {
	OperationID   string   `json:"operationId"`
	Tags          []string `json:"tags"`
	Description   string   `json:"description"`
	CanonicalPath string   `json:"x-canonical-path"`
	RequestBody   struct {
		Content map[string]struct {
			Schema *schema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema *schema `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

// service is one extract service of the catalogue, as the document
// declares its operation.
type service struct {
	Platform, Name string // "pro_net", "company.info"
	Path           string // the document's path, "/v1/pro_net/company.info"
	Summary        string // first line of the description
	Record         string // component schema of a record; "" when untyped
	InputField     string // "urls" or "queries"
	Options        *schema
}

// services lists the extract services: the operations that carry an
// x-canonical-path /v1/extract/{platform}/{service}, sorted by path.
func (d document) services() ([]service, error) {
	var out []service
	for path, ops := range d.Paths {
		raw, ok := ops["post"]
		if !ok {
			continue
		}
		var op operation
		if err := json.Unmarshal(raw, &op); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rest, ok := strings.CutPrefix(op.CanonicalPath, "/v1/extract/")
		if !ok {
			continue
		}
		platform, name, ok := strings.Cut(rest, "/")
		if !ok {
			return nil, fmt.Errorf("%s: x-canonical-path %q is not /v1/extract/{platform}/{service}", path, op.CanonicalPath)
		}
		s := service{Platform: platform, Name: name, Path: path, Summary: firstLine(op.Description)}
		body := op.RequestBody.Content["application/json"].Schema
		if body == nil {
			return nil, fmt.Errorf("%s: no JSON request body", path)
		}
		for _, f := range []string{"urls", "queries"} {
			if body.Properties[f] != nil {
				s.InputField = f
			}
		}
		if s.InputField == "" {
			return nil, fmt.Errorf("%s: the request body has neither urls nor queries", path)
		}
		if o := body.Properties["options"]; o != nil && len(o.Properties) > 0 {
			s.Options = o
		}
		if ok := op.Responses["200"].Content["application/json"].Schema; ok != nil {
			s.Record = recordOf(ok)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// recordOf is the component named by data.items of a 200 answer
// (allOf: [Run, {properties: {data: {items: {$ref}}}}]).
func recordOf(s *schema) string {
	for _, part := range s.AllOf {
		if d := part.Properties["data"]; d != nil && d.Items != nil {
			if name, ok := strings.CutPrefix(d.Items.Ref, schemaPrefix); ok {
				return name
			}
		}
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// words splits an identifier of the document ("company.info", "pro_net",
// "sortVideosBy") into lower-case words.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_' || r == '.' || r == '-' || r == ' ' || r == '/':
			flush()
		case r >= 'A' && r <= 'Z' && i > 0 && (rs[i-1] >= 'a' && rs[i-1] <= 'z' || rs[i-1] >= '0' && rs[i-1] <= '9'):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// initialisms are written in capitals in Go names (Go's naming habit).
var initialisms = map[string]string{"id": "ID", "url": "URL", "urls": "URLs", "api": "API", "http": "HTTP", "ms": "MS", "srt": "SRT", "uri": "URI", "cid": "CID", "fid": "FID", "urn": "URN"}

// goName is the exported Go name of a document identifier.
func goName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if up, ok := initialisms[w]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	out := b.String()
	if out == "" || out[0] >= '0' && out[0] <= '9' {
		out = "X" + out
	}
	return out
}

// tsName is the camelCase name of a service ("company.info" → companyInfo).
func tsName(s string) string {
	ws := words(s)
	for i := 1; i < len(ws); i++ {
		ws[i] = strings.ToUpper(ws[i][:1]) + ws[i][1:]
	}
	return strings.Join(ws, "")
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// byPlatform groups the services by platform, the platforms sorted.
func byPlatform(svcs []service) ([]string, map[string][]service) {
	by := map[string][]service{}
	for _, s := range svcs {
		by[s.Platform] = append(by[s.Platform], s)
	}
	platforms := make([]string, 0, len(by))
	for p := range by {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	return platforms, by
}
