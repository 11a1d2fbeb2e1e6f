package registry

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Each class of compile error must be refused with a message that names the
// CUE file and the line of the offending declaration, so an operator fixing
// a rejected reload knows where to look.

const loadBaseFile = "services/base.cue"

const loadBase = `package sdr

sources: {
	source_a: {
		name:        "Source A"
		description: "Actor-run platform."
		protocol:    "actor_run"
	}
	source_b: {
		name:        "Source B"
		description: "Dataset-scrape platform."
		protocol:    "dataset_scrape"
	}
}

hosts: pro_host: {
	canonical: "www.linkedin.com"
	pattern:   "(?:www\\.)?linkedin\\.com"
}
`

const loadServiceFile = "services/x.cue"

// loadService is a valid service file; each test replaces one line (marked
// by the text it contains) to introduce one error.
const loadService = `package sdr

services: "pro_net/company.info": {
	platform:    "pro_net"
	service:     "company.info"
	description: "A company page."
	input_kind:  "url"
	accepts: [{
		format:  "https://{pro_host}/company/<slug>"
		example: "https://www.linkedin.com/company/stalkit"
		pattern: "https://{pro_host}/company/[a-z0-9-]+/?"
	}]
	options: [{
		name:        "includeEmail"
		type:        "boolean"
		default:     true
		description: "Include the e-mail."
	}]
	record: "#CompanyInfo"
	offers: [{
		offer:            "source_b/pro_net"
		price_per_record: 0.001725
		max_inputs:       1000
		target:           "gd_x"
		request:          "{input: [.inputs[] | {url: .}]}"
		normalize:        "{source: \"pro_net\", name: .name}"
		implements: ["includeEmail"]
	}, {
		offer:            "source_a/actor_1"
		price_per_record: 0.0069
		max_inputs:       1
		target:           "actor~x"
		normalize:        "{source: \"pro_net\", name: .fullName}"
	}]
}
`

// loadWith compiles the base file and the service file with the line that
// contains marker replaced by replacement; it returns the error and the
// (1-based) line number of the replaced line.
func loadWith(t *testing.T, marker, replacement string) (error, int) {
	t.Helper()
	lines := strings.Split(loadService, "\n")
	at := 0
	for i, l := range lines {
		if strings.Contains(l, marker) {
			if at != 0 {
				t.Fatalf("marker %q matches lines %d and %d", marker, at, i+1)
			}
			lines[i] = replacement
			at = i + 1
		}
	}
	if at == 0 {
		t.Fatalf("marker %q not found", marker)
	}
	_, err := LoadFiles(map[string][]byte{
		loadBaseFile:    []byte(loadBase),
		loadServiceFile: []byte(strings.Join(lines, "\n")),
	})
	return err, at
}

func TestLoadValidDeclarations(t *testing.T) {
	reg, err := LoadFiles(map[string][]byte{loadBaseFile: []byte(loadBase), loadServiceFile: []byte(loadService)})
	if err != nil {
		t.Fatalf("the unmodified test service does not load: %v", err)
	}
	s, ok := reg.Service("pro_net", "company.info")
	if !ok || len(s.Offers) != 2 {
		t.Fatalf("service not compiled as declared: %+v", s)
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	cases := []struct {
		name        string
		marker      string
		replacement string
		// message is a fragment the error must contain besides file:line.
		message string
	}{
		{
			name:        "bad regex",
			marker:      `pattern: "https://{pro_host}`,
			replacement: `		pattern: "https://{pro_host}/company/[a-z0-9-+/?"`,
			message:     "bad accept pattern",
		},
		{
			name:        "jq syntax error in normalize",
			marker:      `normalize:        "{source: \"pro_net\", name: .name}"`,
			replacement: `		normalize:        "{source: \"pro_net\", name: }"`,
			message:     "normalize program",
		},
		{
			name:        "jq syntax error in request",
			marker:      `request:`,
			replacement: `		request:          "{input: [.inputs[] | {url: .}]"`,
			message:     "request program",
		},
		{
			name:        "a service no endpoint reaches",
			marker:      `input_kind:  "url"`,
			replacement: "\textract:     false\n\tinput_kind:  \"url\"",
			message:     "extract: false and search: false: no endpoint reaches it (set extract: true",
		},
		{
			name:        "unknown source",
			marker:      `offer:            "source_a/actor_1"`,
			replacement: `		offer:            "source_z/actor_1"`,
			message:     `unknown source "source_z"`,
		},
		{
			name:        "option default of the wrong type",
			marker:      `default:     true`,
			replacement: `		default:     "yes"`,
			message:     "default",
		},
		{
			name:        "duplicate offer",
			marker:      `offer:            "source_a/actor_1"`,
			replacement: `		offer:            "source_b/pro_net"`,
			message:     "declared twice",
		},
		{
			name:        "price zero",
			marker:      `price_per_record: 0.0069`,
			replacement: `		price_per_record: 0`,
			message:     "price_per_record",
		},
		{
			name:        "negative price",
			marker:      `price_per_record: 0.0069`,
			replacement: `		price_per_record: -0.5`,
			message:     "price_per_record",
		},
		{
			name:        "price below one micro-credit",
			marker:      `price_per_record: 0.0069`,
			replacement: `		price_per_record: 0.0000001`,
			message:     "price_per_record",
		},
		{
			name:        "unknown host placeholder",
			marker:      `pattern: "https://{pro_host}`,
			replacement: `		pattern: "https://{nope_host}/company/[a-z0-9-]+/?"`,
			message:     "unknown host placeholder {nope_host}",
		},
		{
			name:        "example not matching its pattern",
			marker:      `example: "https://www.linkedin.com/company/stalkit"`,
			replacement: `		example: "https://www.linkedin.com/in/rbranson"`,
			message:     "does not match its own pattern",
		},
		{
			name:        "implements an undeclared option",
			marker:      `implements: ["includeEmail"]`,
			replacement: `		implements: ["includePhone"]`,
			message:     `undeclared option "includePhone"`,
		},
		{
			name:        "record definition not declared",
			marker:      `record: "#CompanyInfo"`,
			replacement: `	record: "#NoSuchRecord"`,
			message:     "#NoSuchRecord",
		},
		{
			name:        "field unknown to the schema",
			marker:      `max_inputs:       1000`,
			replacement: `		max_input:        1000`,
			message:     "max_input",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err, line := loadWith(t, tc.marker, tc.replacement)
			if err == nil {
				t.Fatal("the declarations compiled; want an error")
			}
			msg := err.Error()
			where := regexp.MustCompile(regexp.QuoteMeta(loadServiceFile) + fmt.Sprintf(`:%d\b`, line))
			if !where.MatchString(msg) {
				t.Errorf("error does not name %s:%d:\n%s", loadServiceFile, line, msg)
			}
			if !strings.Contains(msg, tc.message) {
				t.Errorf("error does not say %q:\n%s", tc.message, msg)
			}
		})
	}
}

// TestLoadServicesDirectory: the real declarations compile, and a directory
// without service files is an error rather than an empty registry.
func TestLoadServicesDirectory(t *testing.T) {
	declared(t)
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("an empty services directory loaded")
	}
	if _, err := Load("no/such/dir"); err == nil {
		t.Error("a missing services directory loaded")
	}
}
