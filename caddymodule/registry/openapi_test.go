package registry_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/registry/openapitest"
	"socialrouter/caddymodule/runs"
	"socialrouter/internal/testservices"
	"socialrouter/services"
)

var update = flag.Bool("update", false, "rewrite testdata/openapi.golden.json")

// openapiFiles is a small, stable set of declarations that exercises every
// part of the document: both input kinds, a max_length, options of every
// type, a coming-soon offer, a service with no live offer, search types (one
// also an extract service, one search only) and record definitions with
// embeddings, a shared helper definition and nullable fields. Its records
// are declared here, not in schemas/records.cue, so that the golden file
// changes only when the document's rendering does.
var openapiFiles = map[string][]byte{
	"services/sources.cue": []byte(`package sdr

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
`),
	"services/hosts.cue": []byte(`package sdr

hosts: {
	pro_host: {canonical: "www.linkedin.com", pattern: "(?:[a-z]{2,3}\\.)?linkedin\\.com"}
	forum_host: {canonical: "www.reddit.com", pattern: "(?:www\\.|old\\.)?reddit\\.com"}
}
`),
	"services/records.cue": []byte(`package sdr

#OATimestamp: =~"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?Z$"

// #OACommon: the fields every record shares (a comment no record that
// embeds it may take as its own description).
#OACommon: {
	name?:         string
	profile_url?:  string
	source?:       #Platform
	extracted_at?: #OATimestamp
}

#OAPerson: {
	name?:  string
	title?: string | null
}

#OACompany: {
	#OACommon
	follower_count?: int
	funding?: {
		rounds?:            int
		last_round_raised?: string | null
	}
	employees?: [...#OAPerson]
	investors?: [...]
}

// A post with its author.
#OAPost: {
	#OACommon
	post_id?: string
	score?:   number
	author?:  #OAPerson
	tags?: [...string]
}

// A place on the map (a comment #OARankedPlace, which embeds it, must not
// take).
#OAPlace: {
	#OACommon
	lat?:  number
	lng?:  number
	rank?: int
	hours?: [string]: [...string]
}

#OARankedPlace: {
	#OAPlace
	is_advertisement?: bool
}
`),
	"services/services.cue": []byte(`package sdr

services: "pro_net/company.info": {
	platform:    "pro_net"
	service:     "company.info"
	description: "Company page: profile, size, funding and employees. One company per URL."
	input_kind:  "url"
	accepts: [{
		format:  "https://{pro_host}/company/<slug>"
		example: "https://www.linkedin.com/company/acme"
		pattern: "https://{pro_host}/company/[^/?#]+/?"
	}]
	record: "#OACompany"
	offers: [{
		offer:            "source_b/pro_net"
		price_per_record: 0.001725
		max_inputs:       1000
		target:           "gd_company"
		normalize:        "{name: .name}"
	}, {
		offer:            "source_a/actor_1"
		price_per_record: 0.0069
		max_inputs:       50
		target:           "actor~company"
		status:           "coming_soon"
	}]
}

services: "pro_net/post.search": {
	platform:    "pro_net"
	service:     "post.search"
	description: "Posts matching a free-text query"
	input_kind:  "query"
	accepts: [{
		format:     "free-text query, Boolean operators supported"
		example:    "rust AND caddy"
		pattern:    ".+"
		max_length: 85
	}]
	record: "#OAPost"
	offers: [{offer: "source_a/actor_2", price_per_record: 0.00276, max_inputs: 50, target: "actor~posts", normalize: "{name: .name}"}]
}

services: "forum_net/subreddit.posts": {
	platform:    "forum_net"
	service:     "subreddit.posts"
	description: "Posts of a subreddit. A sort suffix is accepted."
	input_kind:  "url"
	accepts: [{
		format:  "https://{forum_host}/r/<subreddit>"
		example: "https://www.reddit.com/r/golang"
		pattern: "https://{forum_host}/r/[A-Za-z0-9_]+/?"
		note:    "/r/all and /r/popular work"
	}, {
		format:  "https://{forum_host}/r/<subreddit>/<sort>"
		example: "https://www.reddit.com/r/golang/new"
		pattern: "https://{forum_host}/r/[A-Za-z0-9_]+/(hot|new|top|rising)/?"
	}]
	options: [{
		name: "sort", type: "enum", values: ["hot", "new", "top", "rising"]
		description: "Sort order; overrides a URL suffix."
	}, {
		name: "postedAfter", type: "date"
		description: "Only posts created on or after this UTC date."
	}, {
		name: "includeComments", type: "boolean", default: true
		description: "Include the top comments."
	}, {
		name: "maxComments", type: "integer", default: 10
		description: "Comments per post."
	}, {
		name: "flair", type: "string", values: ["Discussion", "News"]
		description: "Only posts with this flair."
	}]
	limit_scope: "per_input"
	record:      "#OAPost"
	offers: [{
		offer: "source_a/actor_6", price_per_record: 0.00276, max_inputs: 10, target: "actor~forum", normalize: "{name: .name}"
		implements: ["sort", "postedAfter"]
	}, {
		offer: "source_a/actor_7", price_per_record: 0.00552, max_inputs: 5, target: "actor~forum2", normalize: "{name: .name}"
	}]
}

services: "maps/place.search": {
	platform:    "maps"
	service:     "place.search"
	description: "Places found by a maps query."
	input_kind:  "query"
	search:      true
	accepts: [{format: "free-text query", example: "pizza in Rome", pattern: ".+"}]
	record: "#OARankedPlace"
	offers: [{offer: "source_a/actor_3", price_per_record: 0.00552, max_inputs: 100, target: "actor~maps", normalize: "{name: .name}"}]
}

services: "video_net/video.search": {
	platform:    "video_net"
	service:     "video.search"
	description: "Videos found by a query (search endpoint only)."
	input_kind:  "query"
	extract:     false
	search:      true
	accepts: [{format: "free-text query", example: "caddy server", pattern: ".+"}]
	record: "#OAPost"
	offers: [{offer: "source_a/actor_4", price_per_record: 0.00552, max_inputs: 100, target: "actor~yt", normalize: "{name: .name}"}]
}

services: "pin_net/pin.info": {
	platform:    "pin_net"
	service:     "pin.info"
	description: "A pin (no offer serves it yet)."
	input_kind:  "url"
	accepts: [{format: "https://{pro_host}/pin/<id>", example: "https://www.linkedin.com/pin/1", pattern: "https://{pro_host}/pin/[0-9]+"}]
	record: "#OAPost"
	offers: [{offer: "source_b/pin_net", price_per_record: 0.001725, max_inputs: 10, target: "gd_pin", status: "coming_soon"}]
}
`),
}

func inlineRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	r, err := registry.LoadFiles(openapiFiles)
	if err != nil {
		t.Fatalf("loading inline declarations: %v", err)
	}
	return r
}

// registries returns the inline registry and, when it loads, the one of
// the embedded service declarations.
func registries(t *testing.T) map[string]*registry.Registry {
	t.Helper()
	out := map[string]*registry.Registry{"inline": inlineRegistry(t)}
	r, err := registry.LoadFS(testservices.ServicesFS(services.FS))
	if err != nil {
		t.Logf("testservices.ServicesFS(services.FS) does not load (%v): testing the inline declarations only", err)
		return out
	}
	out["services"] = r
	return out
}

func forEachRegistry(t *testing.T, fn func(t *testing.T, r *registry.Registry)) {
	regs := registries(t)
	names := make([]string, 0, len(regs))
	for n := range regs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Run(n, func(t *testing.T) { fn(t, regs[n]) })
	}
}

func decodeDoc(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	return m
}

func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func TestOpenAPIDocumentValid(t *testing.T) {
	forEachRegistry(t, func(t *testing.T, r *registry.Registry) {
		doc := r.OpenAPIJSON()
		if err := openapitest.CheckDocument(doc); err != nil {
			t.Fatalf("the document is not a valid OpenAPI 3.1 document:\n%v", err)
		}
		m := decodeDoc(t, doc)
		for path, want := range map[string]any{
			"openapi":      "3.1.0",
			"info/title":   "Social Data Router",
			"info/version": "2.0.0",
			"components/securitySchemes/bearer/scheme": "bearer",
			"components/securitySchemes/bearer/type":   "http",
		} {
			if got := get(m, strings.Split(path, "/")...); got != want {
				t.Errorf("%s = %v, want %v", path, got, want)
			}
		}
		if !reflect.DeepEqual(m["servers"], []any{map[string]any{"url": "/"}}) {
			t.Errorf("servers = %v", m["servers"])
		}
		desc, _ := get(m, "info", "description").(string)
		if !strings.Contains(desc, "/v1/extract/{platform}/{service}") || !strings.Contains(desc, "alias") {
			t.Errorf("info.description does not name the canonical path and the alias: %q", desc)
		}
	})
}

func TestOpenAPIDeterministic(t *testing.T) {
	a := inlineRegistry(t).OpenAPIJSON()
	b := inlineRegistry(t).OpenAPIJSON()
	if !bytes.Equal(a, b) {
		t.Fatal("two loads of the same declarations render different documents")
	}
}

func TestOpenAPIOperations(t *testing.T) {
	forEachRegistry(t, func(t *testing.T, r *registry.Registry) {
		m := decodeDoc(t, r.OpenAPIJSON())
		paths := m["paths"].(map[string]any)

		ids := map[string]string{}
		for p, item := range paths {
			for method, op := range item.(map[string]any) {
				id, _ := get(op, "operationId").(string)
				if id == "" {
					t.Errorf("%s %s has no operationId", method, p)
				}
				if prev, dup := ids[id]; dup {
					t.Errorf("operationId %s on both %s and %s %s", id, prev, method, p)
				}
				ids[id] = method + " " + p
			}
		}

		extractPaths := 0
		for _, s := range r.Services {
			p := "/v1/" + s.Platform + "/" + s.Name
			item, ok := paths[p].(map[string]any)
			if !s.Callable() {
				if ok {
					t.Errorf("%s is not callable but has the path %s", s.Key, p)
				}
				continue
			}
			extractPaths++
			if !ok {
				t.Errorf("callable service %s has no path %s", s.Key, p)
				continue
			}
			if len(item) != 1 || item["post"] == nil {
				t.Errorf("%s: want exactly one operation, POST; got %v", p, keys(item))
				continue
			}
			op := item["post"]
			wantID := "run_" + s.Platform + "_" + strings.ReplaceAll(s.Name, ".", "_")
			if got := get(op, "operationId"); got != wantID {
				t.Errorf("%s: operationId %v, want %s", p, got, wantID)
			}
			if got := get(op, "security"); !reflect.DeepEqual(got, []any{map[string]any{"bearer": []any{}}}) {
				t.Errorf("%s: security %v, want bearer", p, got)
			}
			if got := get(op, "tags"); !reflect.DeepEqual(got, []any{s.Platform}) {
				t.Errorf("%s: tags %v", p, got)
			}
			for _, code := range []string{"200", "400", "401", "402", "404", "413", "429", "502", "504"} {
				if get(op, "responses", code) == nil {
					t.Errorf("%s: response %s not documented", p, code)
				}
			}
			body := get(op, "requestBody", "content", "application/json", "schema")
			if get(body, "additionalProperties") != false || get(body, "properties", "options", "additionalProperties") != false {
				t.Errorf("%s: the body and its options must be closed", p)
			}
			var ids []any
			maxInputs := 0
			for _, o := range s.LiveOffers() {
				ids = append(ids, o.ID)
				maxInputs = max(maxInputs, o.MaxInputs)
			}
			if got := get(body, "properties", "provider", "enum"); !reflect.DeepEqual(got, ids) {
				t.Errorf("%s: provider enum %v, want the live offers %v", p, got, ids)
			}
			if got := get(body, "properties", s.InputField(), "maxItems"); got != float64(maxInputs) {
				t.Errorf("%s: %s.maxItems %v, want %d", p, s.InputField(), got, maxInputs)
			}
		}

		// Every other path is one of the fixed endpoints.
		fixed := map[string]string{
			"/v1/search": "post", "/v1/extractions/{id}": "get", "/v1/account/usage": "get", "/v1/account/transactions": "get",
			"/v1/account/balance": "get", "/v1/services": "get", "/v1/services/{platform}": "get",
			"/v1/services/{platform}/{service}": "get", "/v1/providers": "get",
			"/v1/providers/{id}": "get", "/v1/openapi.json": "get",
			"/v1/health/live": "get", "/v1/health/ready": "get",
			"/v1/extractions/{id}/records": "get", "/v1/extractions/{id}/cancel": "post",
		}
		// /mcp: the MCP endpoint, anonymous (discovery tools), with a key
		// or with an OAuth access token; its Guard's 401 carries the
		// challenge that starts the sign-in.
		for _, method := range []string{"post", "get", "delete"} {
			op := get(paths, "/mcp", method)
			want := []any{map[string]any{}, map[string]any{"bearer": []any{}}, map[string]any{"oauth2": []any{"mcp"}}}
			if sec := get(op, "security"); !reflect.DeepEqual(sec, want) {
				t.Errorf("%s /mcp has security %v, want anonymous, bearer or oauth2", method, sec)
			}
			if get(op, "responses", "401", "headers", "WWW-Authenticate", "required") != true ||
				get(op, "responses", "401", "content", "application/json") == nil {
				t.Errorf("%s /mcp: the 401 must carry WWW-Authenticate and the Error envelope", method)
			}
			if get(op, "responses", "400", "content", "application/json") == nil {
				t.Errorf("%s /mcp: the 400 invalid_request of a Bearer without token is not documented", method)
			}
		}
		// The OAuth endpoints: public, and exactly the paths package oauth
		// (and the dashboard, for /oauth/authorize) serves.
		oauthPaths := map[string][]string{
			"/.well-known/oauth-protected-resource/mcp": {"get"}, "/.well-known/oauth-protected-resource": {"get"},
			"/.well-known/oauth-authorization-server": {"get"}, "/oauth/register": {"post"},
			"/oauth/authorize": {"get", "post"}, "/oauth/token": {"post"}, "/oauth/revoke": {"post"},
		}
		for p, methods := range oauthPaths {
			if !oauth.Serves(p) && p != oauth.PathAuthorize {
				t.Errorf("%s is documented but package oauth does not serve it", p)
			}
			if item, _ := paths[p].(map[string]any); len(item) != len(methods) {
				t.Errorf("%s: operations %v, want %v", p, keys(item), methods)
			}
			for _, m := range methods {
				op := get(paths, p, m)
				if !reflect.DeepEqual(get(op, "security"), []any{}) || !reflect.DeepEqual(get(op, "tags"), []any{"oauth"}) {
					t.Errorf("%s %s: want public, tagged oauth; got security %v, tags %v", m, p, get(op, "security"), get(op, "tags"))
				}
			}
		}
		for _, p := range []string{oauth.PathResourceMeta, oauth.PathResourceMeta + oauth.ResourcePath, oauth.PathServerMeta,
			oauth.PathRegister, oauth.PathAuthorize, oauth.PathToken, oauth.PathRevoke} {
			if paths[p] == nil {
				t.Errorf("package oauth serves %s, which the document does not list", p)
			}
		}
		flow := get(m, "components", "securitySchemes", "oauth2", "flows", "authorizationCode")
		for k, want := range map[string]any{"authorizationUrl": oauth.PathAuthorize, "tokenUrl": oauth.PathToken, "refreshUrl": oauth.PathToken} {
			if got := get(flow, k); got != want {
				t.Errorf("oauth2 flow %s = %v, want %s", k, got, want)
			}
		}
		if get(flow, "scopes", oauth.Scope) == nil {
			t.Errorf("oauth2 flow does not list the scope %s", oauth.Scope)
		}
		if len(paths) != extractPaths+len(fixed)+1+len(oauthPaths) {
			t.Errorf("%d paths, want %d extract paths, %d fixed ones, /mcp and %d OAuth ones: %v", len(paths), extractPaths, len(fixed), len(oauthPaths), keys(paths))
		}
		public := map[string]bool{"/v1/services": true, "/v1/services/{platform}": true,
			"/v1/services/{platform}/{service}": true, "/v1/providers": true,
			"/v1/providers/{id}": true, "/v1/openapi.json": true,
			"/v1/health/live": true, "/v1/health/ready": true}
		for p, method := range fixed {
			op := get(paths, p, method)
			if op == nil {
				t.Errorf("%s %s is missing", strings.ToUpper(method), p)
				continue
			}
			sec := get(op, "security")
			if public[p] && !reflect.DeepEqual(sec, []any{}) {
				t.Errorf("%s is public but has security %v", p, sec)
			}
			if !public[p] && !reflect.DeepEqual(sec, []any{map[string]any{"bearer": []any{}}}) {
				t.Errorf("%s needs bearer security, has %v", p, sec)
			}
		}
		if got := get(paths, "/v1/services/{platform}", "get", "parameters"); got != nil {
			enum := get(m, "components", "schemas", "Platform", "enum").([]any)
			if len(enum) != 11 || len(r.Platforms) != 11 {
				t.Errorf("Platform enum %v: want the eleven platforms", enum)
			}
		}
	})
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func request(t testing.TB, method, path string, body string) *http.Request {
	t.Helper()
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer sdr_live_test")
	return req
}

func TestOpenAPIRequestBodies(t *testing.T) {
	doc := inlineRegistry(t).OpenAPIJSON()
	long := strings.Repeat("a", 86)
	urls := func(n int) string {
		var l []string
		for i := 0; i < n; i++ {
			l = append(l, fmt.Sprintf("%q", fmt.Sprintf("https://www.reddit.com/r/s%d", i)))
		}
		return `{"urls": [` + strings.Join(l, ",") + `]}`
	}
	cases := []struct {
		name, path, body string
		ok               bool
	}{
		{"urls", "/v1/forum_net/subreddit.posts", `{"urls": ["https://www.reddit.com/r/golang"]}`, true},
		{"url", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/golang"}`, true},
		{"canonical path", "/v1/extract/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/golang"}`, true},
		{"every option", "/v1/forum_net/subreddit.posts", `{"urls": ["https://www.reddit.com/r/golang"], "provider": "source_a/actor_7", "limit": 250,
			"options": {"sort": "new", "postedAfter": "2024-05-01", "includeComments": false, "maxComments": 3, "flair": "News"}}`, true},
		{"both input forms", "/v1/forum_net/subreddit.posts", `{"urls": ["https://www.reddit.com/r/a"], "url": "https://www.reddit.com/r/b"}`, false},
		{"no input", "/v1/forum_net/subreddit.posts", `{"limit": 5}`, false},
		{"empty urls", "/v1/forum_net/subreddit.posts", `{"urls": []}`, false},
		{"too many urls", "/v1/forum_net/subreddit.posts", urls(11), false},
		{"largest max_inputs", "/v1/forum_net/subreddit.posts", urls(10), true},
		{"url not a string", "/v1/forum_net/subreddit.posts", `{"url": 5}`, false},
		{"unknown top-level field", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "type": "x"}`, false},
		{"queries on a url service", "/v1/forum_net/subreddit.posts", `{"queries": ["golang"]}`, false},
		{"unknown offer", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "provider": "source_b/forum_net"}`, false},
		{"limit 0", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "limit": 0}`, false},
		{"limit 5000 (async)", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "limit": 5000}`, true},
		{"limit 5001", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "limit": 5001}`, false},
		{"limit not an integer", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "limit": 2.5}`, false},
		{"unknown option", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "options": {"nsfw": true}}`, false},
		{"boolean option as string", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "options": {"includeComments": "yes"}}`, false},
		{"integer option as float", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "options": {"maxComments": 1.5}}`, false},
		{"integer option as string", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "options": {"maxComments": "3"}}`, false},
		{"enum option out of enum", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "options": {"sort": "best"}}`, false},
		{"date option malformed", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "options": {"postedAfter": "2024/05/01"}}`, false},
		{"string option as number", "/v1/forum_net/subreddit.posts", `{"url": "https://www.reddit.com/r/a", "options": {"flair": 1}}`, false},
		{"options on a service with none", "/v1/pro_net/company.info", `{"url": "https://www.linkedin.com/company/acme", "options": {"x": 1}}`, false},
		{"empty options on a service with none", "/v1/pro_net/company.info", `{"url": "https://www.linkedin.com/company/acme", "options": {}}`, true},
		{"coming-soon offer pinned", "/v1/pro_net/company.info", `{"url": "https://www.linkedin.com/company/acme", "provider": "source_a/actor_1"}`, false},
		{"queries", "/v1/pro_net/post.search", `{"queries": ["rust AND caddy"]}`, true},
		{"query", "/v1/pro_net/post.search", `{"query": "rust"}`, true},
		{"urls on a query service", "/v1/pro_net/post.search", `{"urls": ["https://www.linkedin.com/company/acme"]}`, false},
		{"query too long", "/v1/pro_net/post.search", `{"query": "` + long + `"}`, false},
		{"query at max_length", "/v1/pro_net/post.search", `{"query": "` + long[:85] + `"}`, true},
		{"search", "/v1/search", `{"queries": ["pizza"], "provider": "source_a/maps/place.search", "limit": 1000, "fallback": false, "options": {"anything": 1}, "cursor": "c1"}`, true},
		{"search tagged provider", "/v1/search", `{"queries": ["pizza"], "provider": "source_a/maps/place.search:eu-1"}`, true},
		{"search without queries", "/v1/search", `{"provider": "source_a/maps/place.search"}`, false},
		{"search empty queries", "/v1/search", `{"queries": [], "provider": "source_a/maps/place.search"}`, false},
		{"search malformed provider", "/v1/search", `{"queries": ["x"], "provider": "maps place"}`, false},
		{"search limit 1001 (capped, not refused)", "/v1/search", `{"queries": ["x"], "provider": "source_a/maps/place.search", "limit": 1001}`, true},
		{"search limit 0", "/v1/search", `{"queries": ["x"], "provider": "source_a/maps/place.search", "limit": 0}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := openapitest.CheckRequest(doc, request(t, http.MethodPost, c.path, c.body), []byte(c.body))
			if c.ok && err != nil {
				t.Errorf("valid body refused:\n%v", err)
			}
			if !c.ok && err == nil {
				t.Errorf("invalid body accepted: %s", c.body)
			}
		})
	}
	t.Run("usage days", func(t *testing.T) {
		for q, ok := range map[string]bool{"": true, "?days=1": true, "?days=365": true, "?days=0": false, "?days=366": false, "?days=x": false} {
			err := openapitest.CheckRequest(doc, request(t, http.MethodGet, "/v1/account/usage"+q, ""), nil)
			if (err == nil) != ok {
				t.Errorf("days %q: valid=%v, want %v (%v)", q, err == nil, ok, err)
			}
		}
	})
}

// sampleRun is an extract run of s as the HTTP layer renders it.
func sampleRun(s *registry.Service, data ...json.RawMessage) runs.Run {
	at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	run := runs.Run{
		ID: "ext_01HX0000000000000000000000", Status: "completed", Platform: s.Platform, Service: s.Name,
		URL: s.Accepts[0].Example, CreditsUsed: credits.Micros(1725) * credits.Micros(len(data)),
		Data: data, Pagination: runs.Pagination{Total: len(data), Returned: len(data)},
		CreatedAt: at, CompletedAt: at.Add(1500 * time.Millisecond),
		Attempts: []runs.Attempt{{Offer: s.LiveOffers()[0].ID, Outcome: "ok", Status: 200, DurationMS: 812, Handles: []string{"s_1"}, Records: len(data)}},
	}
	if run.Data == nil {
		run.Data = []json.RawMessage{}
	}
	if lo := s.LiveOffers(); len(lo) > 0 {
		run.ServedBy = lo[0].ID
	}
	if s.InputKind == registry.KindQuery {
		run.Queries = []string{s.Accepts[0].Example}
	}
	return run
}

// sampleSearchRun is a search run of s.
func sampleSearchRun(s *registry.Service, data ...json.RawMessage) runs.Run {
	run := sampleRun(s, data...)
	run.Kind, run.Platform, run.Service, run.ServedBy = "search", "", "", ""
	run.Source, run.Type, run.URL, run.Provider = s.Platform, s.Name, "", s.LiveOffers()[0].Source.ID
	run.Pagination.NextCursor = json.RawMessage(`"cursor_2"`)
	return run
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonResponse(status int, h ...string) *http.Response {
	resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}}
	for i := 0; i+1 < len(h); i += 2 {
		resp.Header.Set(h[i], h[i+1])
	}
	return resp
}

// recordVerdict validates one record of s through the document: as the
// data of a completed run of its extract operation, or of /v1/search for a
// search-only type.
func recordVerdict(t testing.TB, doc []byte, s *registry.Service, rec json.RawMessage) error {
	if s.Callable() {
		req := request(t, http.MethodPost, "/v1/extract/"+s.Platform+"/"+s.Name, "")
		return openapitest.CheckResponse(doc, req, jsonResponse(200), mustMarshal(t, sampleRun(s, rec)))
	}
	req := request(t, http.MethodPost, "/v1/search", "")
	return openapitest.CheckResponse(doc, req, jsonResponse(200), mustMarshal(t, sampleSearchRun(s, rec)))
}

func TestOpenAPIResponses(t *testing.T) {
	r := inlineRegistry(t)
	doc := r.OpenAPIJSON()
	company, _ := r.Service("pro_net", "company.info")
	posts, _ := r.Service("pro_net", "post.search")
	places, _ := r.Service("maps", "place.search")
	videos, _ := r.Service("video_net", "video.search")
	companyRec := json.RawMessage(`{"name": "Acme", "profile_url": "https://www.linkedin.com/company/acme", "source": "pro_net",
		"extracted_at": "2024-05-01T10:00:00.123Z", "follower_count": 1200, "funding": {"rounds": 2, "last_round_raised": null},
		"employees": [{"name": "Ada", "title": null}, {"name": "Bob", "title": "CTO"}], "investors": ["x", {"y": 1}]}`)
	failed := sampleRun(company)
	failed.Status, failed.CreditsUsed = "failed", 0
	failed.Error = &runs.RunError{Code: "provider_error", Type: "provider", Message: "every offer failed"}
	failedNoError := failed
	failedNoError.Error = nil
	wrongPlatform := sampleRun(company, companyRec)
	wrongPlatform.Platform = "maps"
	badID := sampleRun(company, companyRec)
	badID.ID = "run_1"
	badTime := sampleRun(company, companyRec)
	expired := sampleRun(company)
	expiredAt := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	expired.CreditsUsed, expired.Pagination = 3450, runs.Pagination{Total: 2, Returned: 2}
	expired.RecordsExpired, expired.ExpiredAt = true, &expiredAt

	cases := []struct {
		name, method, path string
		resp               *http.Response
		body               []byte
		ok                 bool
	}{
		{"run with a record", "POST", "/v1/extract/pro_net/company.info", jsonResponse(200), mustMarshal(t, sampleRun(company, companyRec)), true},
		{"run on the alias path", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, sampleRun(company, companyRec)), true},
		{"empty run", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, sampleRun(company)), true},
		{"query run", "POST", "/v1/pro_net/post.search", jsonResponse(200), mustMarshal(t, sampleRun(posts, json.RawMessage(`{"post_id": "1", "score": 1.5, "author": {"name": "Ada"}}`))), true},
		{"record field of the wrong type", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, sampleRun(company, json.RawMessage(`{"follower_count": "many"}`))), false},
		{"record with an undeclared field", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, sampleRun(company, json.RawMessage(`{"name": "Acme", "folowers": 1}`))), false},
		{"record with a bad timestamp", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, sampleRun(company, json.RawMessage(`{"extracted_at": "yesterday"}`))), false},
		{"record nested undeclared field", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, sampleRun(company, json.RawMessage(`{"employees": [{"nom": "Ada"}]}`))), false},
		{"record of another service", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, sampleRun(company, json.RawMessage(`{"post_id": "1"}`))), false},
		{"run of another platform", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, wrongPlatform), false},
		{"run id without ext_", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, badID), false},
		{"run timestamp not a date-time", "POST", "/v1/pro_net/company.info", jsonResponse(200),
			bytes.Replace(mustMarshal(t, badTime), []byte(`"created_at":"2024-05-01T10:00:00Z"`), []byte(`"created_at":"1 May"`), 1), false},
		{"failed run as 200", "POST", "/v1/pro_net/company.info", jsonResponse(200), mustMarshal(t, failed), false},
		{"failed run fetched", "GET", "/v1/extractions/ext_01HX", jsonResponse(200), mustMarshal(t, failed), true},
		{"failed run without error", "GET", "/v1/extractions/ext_01HX", jsonResponse(200), mustMarshal(t, failedNoError), false},
		{"search run fetched", "GET", "/v1/extractions/ext_01HX", jsonResponse(200), mustMarshal(t, sampleSearchRun(places)), true},
		{"expired run fetched", "GET", "/v1/extractions/ext_01HX", jsonResponse(200), mustMarshal(t, expired), true},
		{"expired run with a bad expired_at", "GET", "/v1/extractions/ext_01HX", jsonResponse(200),
			[]byte(strings.Replace(string(mustMarshal(t, expired)), `"expired_at":"2024-06-01T00:00:00Z"`, `"expired_at":"last June"`, 1)), false},
		{"search run", "POST", "/v1/search", jsonResponse(200), mustMarshal(t, sampleSearchRun(places, json.RawMessage(`{"name": "Da Mario", "lat": 41.9, "rank": 1, "is_advertisement": false, "hours": {"Mo": ["9-5"]}}`))), true},
		{"search-only type run", "POST", "/v1/search", jsonResponse(200), mustMarshal(t, sampleSearchRun(videos, json.RawMessage(`{"post_id": "v1"}`))), true},
		{"search run with a url", "POST", "/v1/search", jsonResponse(200), bytes.Replace(mustMarshal(t, sampleSearchRun(places)), []byte(`"url":""`), []byte(`"url":"x"`), 1), false},
		{"validation error", "POST", "/v1/extract/pro_net/company.info", jsonResponse(400),
			[]byte(`{"error": {"code": "invalid_option", "type": "validation", "message": "m", "valid_options": [{"name": "sort", "type": "enum", "expects": "one of hot", "values": ["hot"]}], "invalid_options": [{"name": "x", "problem": "unknown option"}]}}`), true},
		{"invalid inputs error", "POST", "/v1/extract/pro_net/company.info", jsonResponse(400),
			[]byte(`{"error": {"code": "invalid_input_format", "type": "validation", "message": "m", "invalid_inputs": [{"index": 0, "input": "x"}], "accepts": [{"format": "f", "example": "e"}]}}`), true},
		{"provider error", "POST", "/v1/extract/pro_net/company.info", jsonResponse(502),
			[]byte(`{"error": {"code": "provider_error", "type": "provider", "message": "m", "run_id": "ext_1", "attempts": [{"offer": "source_b/pro_net", "outcome": "upstream_5xx", "status": 503, "duration_ms": 812}]}}`), true},
		{"error without code", "POST", "/v1/extract/pro_net/company.info", jsonResponse(400), []byte(`{"error": {"type": "validation", "message": "m"}}`), false},
		{"error not in the envelope", "POST", "/v1/extract/pro_net/company.info", jsonResponse(404), []byte(`{"code": "unknown_service"}`), false},
		{"401 with WWW-Authenticate", "POST", "/v1/extract/pro_net/company.info", jsonResponse(401, "WWW-Authenticate", "Bearer"),
			[]byte(`{"error": {"code": "missing_api_key", "type": "authentication", "message": "m"}}`), true},
		{"401 without WWW-Authenticate", "POST", "/v1/extract/pro_net/company.info", jsonResponse(401),
			[]byte(`{"error": {"code": "missing_api_key", "type": "authentication", "message": "m"}}`), false},
		{"bare per-IP 429", "POST", "/v1/extract/pro_net/company.info", &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"30"}}}, nil, true},
		{"bare 429 on a public endpoint", "GET", "/v1/services", &http.Response{StatusCode: 429, Header: http.Header{}}, nil, true},
		{"store unavailable", "GET", "/v1/account/balance", jsonResponse(503), []byte(`{"error": {"code": "store_unavailable", "type": "internal", "message": "m"}}`), true},
		{"store cannot write", "POST", "/v1/extract/pro_net/company.info", jsonResponse(503), []byte(`{"error": {"code": "store_unavailable", "type": "internal", "message": "m", "reason": "disk_full"}}`), true},
		{"store cannot write, unknown reason", "POST", "/v1/extract/pro_net/company.info", jsonResponse(503), []byte(`{"error": {"code": "store_unavailable", "type": "internal", "message": "m", "reason": "gremlins"}}`), false},
		{"undocumented status", "POST", "/v1/extract/pro_net/company.info", jsonResponse(418), []byte(`{"error": {"code": "x", "type": "x", "message": "m"}}`), false},
		{"not JSON", "POST", "/v1/extract/pro_net/company.info", &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/plain"}}}, []byte("ok"), false},
		{"undocumented path", "GET", "/v1/nothing", jsonResponse(200), []byte(`{}`), false},
		{"unknown platform on the extract path", "POST", "/v1/extract/mars_net/x.info", jsonResponse(404),
			[]byte(`{"error": {"code": "unknown_platform", "type": "not_found", "message": "m", "available_platforms": ["pro_net"]}}`), true},
		{"unknown service with a suggestion", "POST", "/v1/extract/pro_net/company.infos", jsonResponse(404),
			[]byte(`{"error": {"code": "unknown_service", "type": "not_found", "message": "m", "did_you_mean": "company.info", "available_services": ["company.info"]}}`), true},
		{"wrong method", "POST", "/v1/services", jsonResponse(405, "Allow", "GET"),
			[]byte(`{"error": {"code": "method_not_allowed", "type": "validation", "message": "m"}}`), true},
		{"error outside the envelope on an undocumented path", "GET", "/v1/nothing", jsonResponse(404), []byte(`{"message": "no"}`), false},
		{"plain-text error on an undocumented path", "GET", "/v1/nothing", &http.Response{StatusCode: 404, Header: http.Header{"Content-Type": {"text/plain"}}}, []byte("no"), false},
		{"balance", "GET", "/v1/account/balance", jsonResponse(200), []byte(`{"balance": 9.998275, "currency": "USD"}`), true},
		{"balance in EUR", "GET", "/v1/account/balance", jsonResponse(200), []byte(`{"balance": 1, "currency": "EUR"}`), false},
		{"usage", "GET", "/v1/account/usage?days=7", jsonResponse(200), []byte(`{"period": "7d", "total_requests": 2, "total_records": 3, "total_credits": 0.005175,
			"by_provider": {"source_b/pro_net": {"requests": 2, "records": 3, "credits": 0.005175}}, "by_platform": {"pro_net": {"requests": 2, "records": 3, "credits": 0.005175}}}`), true},
		{"usage of an unknown platform", "GET", "/v1/account/usage", jsonResponse(200), []byte(`{"period": "30d", "total_requests": 0, "total_records": 0, "total_credits": 0,
			"by_provider": {}, "by_platform": {"mars_net": {"requests": 0, "records": 0, "credits": 0}}}`), false},
		{"unknown platform", "GET", "/v1/services/mars_net", jsonResponse(404), []byte(`{"error": {"code": "unknown_platform", "type": "not_found", "message": "m", "available_platforms": ["pro_net"]}}`), true},
		{"unknown source", "GET", "/v1/providers/source_z", jsonResponse(404), []byte(`{"error": {"code": "not_found", "type": "not_found", "message": "m"}}`), true},
		{"openapi", "GET", "/v1/openapi.json", jsonResponse(200), doc, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := openapitest.CheckResponse(doc, request(t, c.method, c.path, ""), c.resp, c.body)
			if c.ok && err != nil {
				t.Errorf("valid response refused:\n%v", err)
			}
			if !c.ok && err == nil {
				t.Errorf("invalid response accepted: %s", c.body)
			}
		})
	}
	t.Run("ValidateResponse", func(t *testing.T) {
		req := request(t, "POST", "/v1/extract/pro_net/company.info", "")
		openapitest.ValidateResponse(t, doc, req, jsonResponse(200), mustMarshal(t, sampleRun(company, companyRec)))
		rec := &recorder{TB: t}
		openapitest.ValidateResponse(rec, doc, req, jsonResponse(200), []byte(`{}`))
		if !rec.failed {
			t.Error("ValidateResponse did not fail the test on an invalid response")
		}
	})
}

// recorder is a testing.TB that records a failure instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}

// TestOpenAPIViews checks that the catalogue and providers views, rendered
// by the registry, match the document's schemas.
func TestOpenAPIViews(t *testing.T) {
	forEachRegistry(t, func(t *testing.T, r *registry.Registry) {
		doc := r.OpenAPIJSON()
		check := func(path string, body []byte) {
			t.Helper()
			openapitest.ValidateResponse(t, doc, request(t, "GET", path, ""), jsonResponse(200), body)
		}
		check("/v1/services", r.CatalogueJSON())
		for _, p := range r.Platforms {
			b, ok := r.PlatformJSON(p)
			if !ok {
				t.Fatalf("no catalogue for platform %s", p)
			}
			check("/v1/services/"+p, b)
		}
		for _, s := range r.Services {
			if b, ok := r.EntryJSON(s); ok {
				check("/v1/services/"+s.Platform+"/"+s.Name, b)
			}
		}
		for _, status := range []string{"active", "degraded", "down", "coming_soon"} {
			st := func(string) string { return status }
			check("/v1/providers", mustMarshal(t, map[string]any{"data": r.Providers(st)}))
			for _, src := range r.Sources {
				check("/v1/providers/"+src.ID, mustMarshal(t, r.Provider(src, st)))
			}
		}
		check("/v1/openapi.json", doc)
	})
}

// TestOpenAPIRecordSchemasAgreeWithCUE probes every record schema of the
// document with records the CUE definition accepts or refuses, and wants the
// same verdict: the JSON Schema rendering (hoisted definitions, merged
// embeddings) must not drift from the definition the normalizers are
// checked against.
func TestOpenAPIRecordSchemasAgreeWithCUE(t *testing.T) {
	forEachRegistry(t, func(t *testing.T, r *registry.Registry) {
		doc := r.OpenAPIJSON()
		done := map[string]bool{}
		for _, s := range r.Services {
			if done[s.Record] || !(s.Callable() || (s.Search && len(s.LiveOffers()) > 0)) {
				continue
			}
			done[s.Record] = true
			probes := []string{
				`{}`, `{"name": "x"}`, `{"name": 5}`, `{"zz_undeclared": 1}`, `{"source": "pro_net"}`, `{"source": "mars"}`,
				`{"extracted_at": "2024-05-01T10:00:00Z"}`, `{"extracted_at": "2024-05-01T10:00:00.5Z"}`, `{"extracted_at": "yesterday"}`,
			}
			// Every top-level property with values of each JSON type.
			props := recordProperties(r, s)
			for _, name := range keys(props) {
				for _, v := range []string{`"s"`, `1`, `1.5`, `true`, `null`, `[]`, `[1]`, `["s"]`, `{}`, `{"zz": 1}`, `[{}]`, `[{"zz": 1}]`} {
					probes = append(probes, fmt.Sprintf(`{%q: %s}`, name, v))
				}
			}
			for _, p := range probes {
				cueErr := r.ValidateRecord(s, []byte(p))
				docErr := recordVerdict(t, doc, s, json.RawMessage(p))
				if (cueErr == nil) != (docErr == nil) {
					t.Errorf("%s (%s) record %s: CUE says %v, the document says %v", s.Key, s.Record, p, verdict(cueErr), verdict(docErr))
				}
			}
		}
	})
}

func verdict(err error) string {
	if err == nil {
		return "valid"
	}
	return "invalid (" + strings.ReplaceAll(err.Error(), "\n", " ") + ")"
}

// recordProperties lists the top-level properties of s's record, from the
// registry's JSON Schema with embedded definitions followed.
func recordProperties(r *registry.Registry, s *registry.Service) map[string]any {
	sch := r.RecordSchema(s)
	defs, _ := sch["$defs"].(map[string]any)
	out := map[string]any{}
	var walk func(v map[string]any)
	walk = func(v map[string]any) {
		if p, ok := v["properties"].(map[string]any); ok {
			for k, x := range p {
				out[k] = x
			}
		}
		if ref, ok := v["$ref"].(string); ok {
			if d, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any); ok {
				walk(d)
			}
		}
	}
	walk(sch)
	return out
}

func TestOpenAPIGolden(t *testing.T) {
	doc := inlineRegistry(t).OpenAPIJSON()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	golden := filepath.Join("testdata", "openapi.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading the golden file (regenerate with make snapshots): %v", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		got, wantLines := strings.Split(pretty.String(), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(got) || i < len(wantLines); i++ {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(wantLines) {
				w = wantLines[i]
			}
			if g != w {
				t.Fatalf("the document differs from %s at line %d:\n got: %s\nwant: %s\n(regenerate with make snapshots and review the diff)", golden, i+1, g, w)
			}
		}
	}
}

// TestOpenAPIRecordDescriptionsAreTheirOwn: a record component is described
// by the comment above its own definition, never by the comment of a
// definition it embeds (#OACommon, #OAPlace), and has no description when
// it has no comment.
func TestOpenAPIRecordDescriptionsAreTheirOwn(t *testing.T) {
	m := decodeDoc(t, inlineRegistry(t).OpenAPIJSON())
	for name, want := range map[string]any{
		"OAPost":        "A post with its author.",
		"OACompany":     nil,
		"OARankedPlace": nil,
	} {
		schema, ok := get(m, "components", "schemas", name).(map[string]any)
		if !ok {
			t.Fatalf("no component %s", name)
		}
		if got := schema["description"]; got != want {
			t.Errorf("%s: description %q, want %v", name, got, want)
		}
	}
}
