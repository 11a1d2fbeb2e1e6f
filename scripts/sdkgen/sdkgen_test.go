package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"socialrouter/caddymodule/registry"
	"socialrouter/internal/testservices"
)

const root = "../.." // the repository, from scripts/sdkgen

func generate(t *testing.T, services string) map[string][]byte {
	t.Helper()
	r, err := registry.Load(services)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(r.OpenAPIJSON())
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCommittedSDKIsFresh fails when a declaration changed and the SDKs'
// generated files were not regenerated (make sdk). sdk/typescript's own
// test checks its schema.gen.ts against sdk/openapi.json.
func TestCommittedSDKIsFresh(t *testing.T) {
	for name, want := range generate(t, filepath.Join(root, "services")) {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale (%v): run make sdk", name, err)
		}
	}
}

// TestAddedServiceGetsTypedCalls adds the trial services of
// internal/testservices to a copy of services/ and checks that each gets
// its named, typed call in both SDKs, with no change here.
func TestAddedServiceGetsTypedCalls(t *testing.T) {
	dir := t.TempDir()
	if err := testservices.CopyServices(filepath.Join(root, "services"), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := testservices.Add(dir, testservices.Operator); err != nil {
		t.Fatal(err)
	}
	files := generate(t, dir)
	r, err := registry.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	goCalls, ts := string(files[goCallsFile]), string(files[tsCallsFile])
	for _, key := range testservices.Keys(testservices.Operator) {
		platform, service, _ := strings.Cut(key, "/")
		if s, ok := r.Service(platform, service); !ok || !s.Callable() {
			continue // a search type: reached through Search, not a named call
		}
		for _, want := range []string{
			`func \(g ` + goName(platform) + `Calls\) ` + goName(service) + `\(ctx context.Context, req ` + goName(platform) + goName(service) + `Request`,
			`\t` + goName(platform) + `\s+` + goName(platform) + `Calls\n`,
		} {
			if !regexp.MustCompile(want).MatchString(goCalls) {
				t.Errorf("%s: the Go calls lack %s", key, want)
			}
		}
		if !strings.Contains(ts, "    "+platform+": {\n") || !strings.Contains(ts, "      "+tsName(service)+": (body: ExtractBody<") {
			t.Errorf("%s: the TypeScript calls lack %s.%s", key, platform, tsName(service))
		}
		if strings.Contains(goCalls, "(*Run[json.RawMessage], error)") {
			t.Errorf("%s: a generated call returns untyped records", key)
		}
	}
}

// TestNames pins the identifiers generated from the document's names.
func TestNames(t *testing.T) {
	for _, tc := range []struct{ in, goN, tsN string }{
		{"pro_net", "ProNet", "proNet"},
		{"company.info", "CompanyInfo", "companyInfo"},
		{"sortVideosBy", "SortVideosBy", "sortVideosBy"},
		{"profile_url", "ProfileURL", "profileUrl"},
		{"channel_id", "ChannelID", "channelId"},
	} {
		if g := goName(tc.in); g != tc.goN {
			t.Errorf("goName(%q) = %q, want %q", tc.in, g, tc.goN)
		}
		if s := tsName(tc.in); s != tc.tsN {
			t.Errorf("tsName(%q) = %q, want %q", tc.in, s, tc.tsN)
		}
	}
}

// TestGoTypes pins the schema → Go mapping on a small document: optional
// scalars are pointers, nullable ones too, a nested object is named after
// its parent unless a component has that name, data of untyped objects
// makes the type generic.
func TestGoTypes(t *testing.T) {
	doc := []byte(`{"paths": {}, "components": {"schemas": {
		"A": {"type": "object", "required": ["id"], "properties": {
			"id": {"type": "string"},
			"n": {"type": "integer"},
			"note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
			"b": {"type": "object", "properties": {"x": {"type": "boolean"}}},
			"tags": {"type": "array", "items": {"type": "string"}},
			"by": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/AB"}}}},
		"AB": {"type": "object", "properties": {"y": {"type": ["number", "null"]}}},
		"Page": {"type": "object", "properties": {"data": {"type": "array", "items": {"type": "object"}}}},
		"Kind": {"type": "string", "enum": ["one_two"]}}}}`)
	var d document
	if err := jsonUnmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	src, err := goTypesSource(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`ID\s+string\s+` + "`json:\"id\"`",
		`N\s+\*int64\s+` + "`json:\"n,omitempty\"`",
		`Note\s+\*string`,
		`B\s+\*ABObject\s`,
		`type ABObject struct`,
		`type AB struct`,
		`Y \*float64`,
		`Tags\s+\[\]string`,
		`By\s+map\[string\]AB\s`,
		`type Page\[T any\] struct`,
		`Data \[\]T`,
		`KindOneTwo Kind = "one_two"`,
	} {
		if !regexp.MustCompile(want).Match(src) {
			t.Errorf("the Go types lack %s:\n%s", want, src)
		}
	}
}

// TestDocumentedCallsExist: every generated call the READMEs and the
// dashboard's quick start show (client.extract.pro_net.companyInfo,
// client.Extract.ProNet.CompanyInfo) exists in the committed SDKs, so a
// renamed service cannot leave a snippet that no longer compiles.
func TestDocumentedCallsExist(t *testing.T) {
	goCalls, err := os.ReadFile(filepath.Join(root, goCallsFile))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := os.ReadFile(filepath.Join(root, tsCallsFile))
	if err != nil {
		t.Fatal(err)
	}
	tsCall := regexp.MustCompile(`client\.extract\.([a-z_]+)\.([A-Za-z]+)\(`)
	goCall := regexp.MustCompile(`client\.Extract\.([A-Za-z]+)\.([A-Za-z]+)\(`)
	seen := 0
	for _, doc := range []string{"README.md", "sdk/typescript/README.md", "sdk/go/README.md", "caddymodule/dashboard/templates/overview.html", "docs/async.md", "docs/webhooks.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range tsCall.FindAllStringSubmatch(string(b), -1) {
			seen++
			if !regexp.MustCompile(`(?m)^    ` + m[1] + `: \{\n(      .*\n)*?      ` + m[2] + `: `).Match(ts) {
				t.Errorf("%s shows client.extract.%s.%s, which %s does not define", doc, m[1], m[2], tsCallsFile)
			}
		}
		for _, m := range goCall.FindAllStringSubmatch(string(b), -1) {
			seen++
			if !strings.Contains(string(goCalls), "func (g "+m[1]+"Calls) "+m[2]+"(") {
				t.Errorf("%s shows client.Extract.%s.%s, which %s does not define", doc, m[1], m[2], goCallsFile)
			}
		}
	}
	if seen == 0 {
		t.Error("no documented call found: the patterns no longer match the snippets")
	}
}
