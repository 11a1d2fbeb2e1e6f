package registry

import (
	"fmt"
)

// The OpenAPI document is rendered once per registry (see renderViews) from
// the same declarations the router dispatches on: one operation per callable
// extract service under /v1/{platform}/{service}, the search, run, account
// and catalogue endpoints, and one component schema per record definition.
// Maps are rendered by encoding/json with sorted keys, so the document is
// byte-for-byte deterministic for a given registry.

// obj is a JSON object of the document.
type obj = map[string]any

const (
	schemaPrefix   = "#/components/schemas/"
	responsePrefix = "#/components/responses/"
	headerPrefix   = "#/components/headers/"

	searchPattern = `^[a-z0-9_]+/[a-z_]+/[a-z_.]+(:[A-Za-z0-9_-]+)?$`
	datePattern   = `^\d{4}-\d{2}-\d{2}$`
)

// buildOpenAPI renders the OpenAPI 3.1 document of the registry.
func (r *Registry) buildOpenAPI() ([]byte, error) {
	b := &openapiBuilder{r: r, schemas: obj{}, recordRefs: map[string]string{}}
	doc, err := b.document()
	if err != nil {
		return nil, err
	}
	operations(doc)
	asyncDoc(doc)
	cacheDoc(doc)
	oauthDoc(doc)
	return mustJSON(doc), nil
}

type openapiBuilder struct {
	r *Registry
	// schemas is components.schemas.
	schemas obj
	// recordRefs maps a record definition ("#CompanyInfo") to its component
	// name.
	recordRefs map[string]string
}

func ref(name string) obj       { return obj{"$ref": schemaPrefix + name} }
func respRef(name string) obj   { return obj{"$ref": responsePrefix + name} }
func headerRef(name string) obj { return obj{"$ref": headerPrefix + name} }

func str(desc string) obj {
	o := obj{"type": "string"}
	if desc != "" {
		o["description"] = desc
	}
	return o
}

// object is an object schema of props, of which required must be present;
// desc, unless empty, is its description.
func object(desc string, required []any, props obj) obj {
	o := obj{"type": "object", "required": required, "properties": props}
	if desc != "" {
		o["description"] = desc
	}
	return o
}

func integer(desc string) obj { return obj{"type": "integer", "description": desc} }

func stringArray(desc string) obj {
	return obj{"type": "array", "items": obj{"type": "string"}, "description": desc}
}

func jsonContent(schema obj) obj {
	return obj{"application/json": obj{"schema": schema}}
}

func (b *openapiBuilder) document() (obj, error) {
	b.fixedSchemas()
	paths := obj{}
	tags := []any{}
	for _, p := range b.r.Platforms {
		n := 0
		for _, s := range b.r.byPlatform[p] {
			if !s.Callable() {
				continue
			}
			op, err := b.extractOperation(s)
			if err != nil {
				return nil, err
			}
			paths["/v1/"+p+"/"+s.Name] = obj{"post": op}
			n++
		}
		if n > 0 {
			tags = append(tags, obj{"name": p, "description": fmt.Sprintf("Extract services of the %s platform.", p)})
		}
	}
	search, err := b.searchOperation()
	if err != nil {
		return nil, err
	}
	paths["/v1/search"] = obj{"post": search}
	b.runsAndAccount(paths)
	b.ledger(paths)
	b.catalogue(paths)
	paths["/mcp"] = mcpPath()
	tags = append(tags,
		obj{"name": "search", "description": "Search types selected by a provider slug."},
		obj{"name": "runs", "description": "Stored runs of the authenticated account."},
		obj{"name": "account", "description": "Usage and balance of the authenticated account."},
		obj{"name": "catalogue", "description": "Public discovery: services, sources and this description."},
		obj{"name": "mcp", "description": "The Model Context Protocol endpoint: every service as a tool. Sign in with an API key or OAuth (`oauth`)."},
	)
	tags = append(tags, obj{"name": "webhooks", "description": "Requests the gateway sends to an account's registered endpoints when its runs end."})
	return obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":       "Social Data Router",
			"version":     "2.0.0",
			"description": infoDescription,
		},
		"servers":  []any{obj{"url": "/"}},
		"security": []any{obj{"bearer": []any{}}},
		"tags":     tags,
		"paths":    paths,
		"webhooks": webhooks(),
		"components": obj{
			"schemas":         b.schemas,
			"responses":       errorResponses(),
			"headers":         headers(),
			"securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer", "description": "API key of the account: `Authorization: Bearer sdr_live_…`; a test key, `sdr_test_…`, gets the same answers from the offers' example payloads with no upstream call, charged to the account's test balance (`livemode: false` on its runs)."}},
		},
	}, nil
}

const infoDescription = "Extracts normalized records from public social and maps platforms by routing each call " +
	"to one of several interchangeable offers, in failover order, billing per returned record.\n\n" +
	"Each extract service is listed here under the path `/v1/{platform}/{service}` (operationId " +
	"`run_<platform>_<service>`, dots replaced by underscores). The extract-namespaced path " +
	"`POST /v1/extract/{platform}/{service}` is the canonical form; `/v1/{platform}/{service}` is an alias " +
	"served identically (same body, same responses).\n\n" +
	"Every request is subject to a per-IP rate limit (header `RateLimit-Policy` on every response); a " +
	"refusal is a bare 429 with `Retry-After` and no JSON body. All other errors carry the `Error` envelope."

// headers are the documented response headers.
func headers() obj {
	return obj{
		"Retry-After": obj{
			"description": "Seconds to wait before retrying.",
			"schema":      obj{"type": "integer", "minimum": 0},
		},
		"WWW-Authenticate": obj{
			"description": "Authentication scheme to use: `Bearer`.",
			"required":    true,
			"schema":      obj{"type": "string"},
		},
	}
}

// errorResponses are the shared error responses (components.responses).
func errorResponses() obj {
	resp := func(desc string) obj {
		return obj{"description": desc, "content": jsonContent(ref("Error"))}
	}
	r := obj{
		"BadRequest": resp("Validation error (type `validation`): `invalid_json`, `unknown_field` (with `allowed_fields`), " +
			"`invalid_field`, `missing_input`, `conflicting_input`, `wrong_input_field`, `too_many_inputs`, " +
			"`invalid_limit`, `invalid_input_format` (with `invalid_inputs`), " +
			"`invalid_option` (with `valid_options`), `unknown_offer` (with `available_offers`), " +
			"`wrong_endpoint`, `missing_queries`, `missing_provider`, `unknown_provider` (with `valid_providers`), " +
			"`invalid_cursor`, `invalid_days`: refused before routing and billing. " +
			"`upstream_rejected_input`: the upstream itself refused the input (e.g. a `validation_errors` answer, " +
			"whose messages the error message quotes); no failover, no charge."),
		"Unauthorized": resp("Authentication error (type `authentication`): `missing_api_key`, " +
			"`invalid_api_key`, `revoked_api_key`."),
		"PaymentRequired": resp("Billing error (type `billing`): `insufficient_credits`."),
		"NotFound": resp("Not found (type `not_found`): `unknown_platform`, `unknown_service` (with " +
			"`did_you_mean` and `available_services`), `service_not_available`, `not_found` (a run id of " +
			"another account behaves as nonexistent)."),
		"PayloadTooLarge": resp("`request_too_large`: the body exceeds 1 MiB."),
		"TooManyRequests": resp("Rate limited: `credit_limit_exceeded` (per-key credit limit, type " +
			"`rate_limit`), `too_many_concurrent_runs`, `too_many_async_runs` (`Prefer: respond-async`: the account " +
			"has its most async runs in flight, `async_max_per_account`, default 100), `upstream_rate_limited` (every offer was rate-limited " +
			"upstream; carries `run_id` and `attempts`). The per-IP refusal carries no JSON body."),
		"BadGateway": resp("`provider_error` (type `provider`): every offer tried failed; carries `run_id` " +
			"and `attempts`. The failed run is stored with no charge."),
		"ServiceUnavailable": resp("`store_unavailable` (type `internal`): the account store could not be reached, " +
			"or cannot write now (`reason` `disk_full` or `write_failed`: the call is refused before any upstream call, " +
			"with `Retry-After`); nothing was charged. Retry shortly."),
		"GatewayTimeout": resp("`request_timeout` or `request_soft_timeout` (type `timeout`): the last " +
			"offer attempt timed out; carries `run_id` and `attempts`."),
	}
	r["Unauthorized"].(obj)["headers"] = obj{"WWW-Authenticate": headerRef("WWW-Authenticate")}
	r["TooManyRequests"].(obj)["headers"] = obj{"Retry-After": headerRef("Retry-After")}
	r["ServiceUnavailable"].(obj)["headers"] = obj{"Retry-After": headerRef("Retry-After")}
	return r
}
