package registry

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
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

	extractLimitMax = 250
	searchLimitMax  = 1000
	limitDefault    = 100
	searchPattern   = `^[a-z0-9_]+/[a-z_]+/[a-z_.]+(:[A-Za-z0-9_-]+)?$`
	datePattern     = `^\d{4}-\d{2}-\d{2}$`
)

// buildOpenAPI renders the OpenAPI 3.1 document of the registry.
func (r *Registry) buildOpenAPI() ([]byte, error) {
	b := &openapiBuilder{r: r, schemas: obj{}, recordRefs: map[string]string{}}
	doc, err := b.document()
	if err != nil {
		return nil, err
	}
	operations(doc)
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
	b.catalogue(paths)
	paths["/mcp"] = mcpPath()
	tags = append(tags,
		obj{"name": "search", "description": "Search types selected by a provider slug."},
		obj{"name": "runs", "description": "Stored runs of the authenticated account."},
		obj{"name": "account", "description": "Usage and balance of the authenticated account."},
		obj{"name": "catalogue", "description": "Public discovery: services, sources and this description."},
		obj{"name": "mcp", "description": "The Model Context Protocol endpoint: every service as a tool."},
	)
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
		"components": obj{
			"schemas":         b.schemas,
			"responses":       errorResponses(),
			"headers":         headers(),
			"securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer", "description": "API key of the account: `Authorization: Bearer sdr_live_…`."}},
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
			"`wrong_endpoint`, `missing_queries`, `invalid_days`. Refused before routing and billing."),
		"Unauthorized": resp("Authentication error (type `authentication`): `missing_api_key`, " +
			"`invalid_api_key`, `revoked_api_key`."),
		"PaymentRequired": resp("Billing error (type `billing`): `insufficient_credits`."),
		"NotFound": resp("Not found (type `not_found`): `unknown_platform`, `unknown_service` (with " +
			"`did_you_mean` and `available_services`), `service_not_available`, `not_found` (a run id of " +
			"another account behaves as nonexistent)."),
		"PayloadTooLarge": resp("`request_too_large`: the body exceeds 1 MiB."),
		"TooManyRequests": resp("Rate limited: `credit_limit_exceeded` (per-key credit limit, type " +
			"`rate_limit`), `too_many_concurrent_runs`, `upstream_rate_limited` (every offer was rate-limited " +
			"upstream; carries `run_id` and `attempts`). The per-IP refusal carries no JSON body."),
		"BadGateway": resp("`provider_error` (type `provider`): every offer tried failed; carries `run_id` " +
			"and `attempts`. The failed run is stored with no charge."),
		"ServiceUnavailable": resp("`store_unavailable` (type `internal`): the account store could not be reached; " +
			"nothing was charged. Retry shortly."),
		"GatewayTimeout": resp("`request_timeout` or `request_soft_timeout` (type `timeout`): the last " +
			"offer attempt timed out; carries `run_id` and `attempts`."),
	}
	r["Unauthorized"].(obj)["headers"] = obj{"WWW-Authenticate": headerRef("WWW-Authenticate")}
	r["TooManyRequests"].(obj)["headers"] = obj{"Retry-After": headerRef("Retry-After")}
	return r
}

// fixedSchemas adds the schemas that do not depend on the declarations
// (besides the platform list).
func (b *openapiBuilder) fixedSchemas() {
	platforms := make([]any, len(b.r.Platforms))
	for i, p := range b.r.Platforms {
		platforms[i] = p
	}
	s := b.schemas
	s["Platform"] = obj{"type": "string", "enum": platforms, "description": "Platform identifier."}
	dateTime := obj{"type": "string", "format": "date-time", "description": "ISO 8601 UTC timestamp."}
	runID := obj{"type": "string", "pattern": "^ext_", "description": "Run id, form `ext_<id>`."}
	money := func(desc string) obj { return obj{"type": "number", "minimum": 0, "description": desc} }

	s["Attempt"] = obj{
		"type":        "object",
		"description": "One offer attempt of a run, for tracing paid upstream work.",
		"required":    []any{"offer", "outcome", "duration_ms"},
		"properties": obj{
			"offer":       str("Offer id `<source>/<name>`."),
			"outcome":     str("Outcome of the attempt, e.g. `ok`, `upstream_5xx`, `timeout`; `circuit_open` and `unpayable` are offers skipped without a call (breaker open; not one record of the offer payable from the balance or the key's credit limit)."),
			"status":      integer("Upstream HTTP status, when one was received."),
			"duration_ms": obj{"type": "integer", "minimum": 0, "description": "Duration of the attempt in milliseconds."},
			"handles":     stringArray("Upstream run or snapshot ids of the attempt's calls."),
			"message":     str("Upstream or router message."),
			"records":     obj{"type": "integer", "minimum": 0, "description": "Records the attempt produced."},
		},
	}
	s["RunError"] = obj{
		"type":        "object",
		"description": "Error of a failed run.",
		"required":    []any{"code", "type", "message"},
		"properties":  obj{"code": str(""), "type": str(""), "message": str("")},
	}
	s["Run"] = obj{
		"type":        "object",
		"description": "Result of a call to an extract service.",
		"required":    []any{"id", "status", "platform", "service", "url", "credits_used", "data", "pagination", "created_at", "completed_at"},
		"properties": obj{
			"id":           runID,
			"status":       obj{"type": "string", "enum": []any{"completed", "failed"}},
			"platform":     ref("Platform"),
			"service":      str("Service name, e.g. `profile.info`."),
			"url":          str("For url-kind services the input url; for query-kind services the first query."),
			"queries":      stringArray("Query-kind runs: the original list of queries."),
			"served_by":    str("Offer id that actually ran (after any failover); on a failed run the last offer tried."),
			"credits_used": money("Actual charge of the run."),
			"data":         obj{"type": "array", "items": obj{"type": "object"}, "description": "Normalized records; a field is present only when the platform exposes it."},
			"pagination": obj{
				"type":     "object",
				"required": []any{"total", "returned"},
				"properties": obj{
					"total":    obj{"type": "integer", "minimum": 0, "description": "Records produced."},
					"returned": obj{"type": "integer", "minimum": 0, "description": "Records in `data`."},
				},
			},
			"created_at":   dateTime,
			"completed_at": dateTime,
			"error":        ref("RunError"),
			"attempts":     obj{"type": "array", "items": ref("Attempt")},
			"capped_by": obj{"type": "string", "enum": []any{"balance", "credit_limit"},
				"description": "Present when money capped the records asked of the upstream below `limit`: the available balance (balance minus what calls in flight hold) or the key's credit limit. The run returns (and charges) at most what was reserved."},
		},
		"if":   obj{"properties": obj{"status": obj{"const": "completed"}}},
		"then": obj{"required": []any{"served_by"}},
		"else": obj{"required": []any{"error"}},
	}
	s["SearchRun"] = obj{
		"type":        "object",
		"description": "Result of POST /v1/search.",
		"required":    []any{"id", "kind", "status", "source", "type", "url", "queries", "credits_used", "data", "pagination", "created_at", "completed_at"},
		"properties": obj{
			"id":           runID,
			"kind":         obj{"const": "search"},
			"status":       obj{"type": "string", "enum": []any{"completed", "failed"}},
			"source":       obj{"$ref": schemaPrefix + "Platform", "description": "Platform identifier of the search type."},
			"type":         str("Search type, e.g. `place.search`."),
			"url":          obj{"const": "", "description": "Always the empty string."},
			"queries":      stringArray("The submitted queries."),
			"provider":     str("Source part of the provider that served (e.g. `source_a`)."),
			"credits_used": money("Actual charge."),
			"data":         obj{"type": "array", "items": obj{"type": "object"}},
			"pagination": obj{
				"type":     "object",
				"required": []any{"total", "returned"},
				"properties": obj{
					"total":       obj{"type": "integer", "minimum": 0},
					"returned":    obj{"type": "integer", "minimum": 0},
					"next_cursor": obj{"type": []any{"string", "null"}, "description": "Opaque cursor of the next page (`cursor` of the next request); null or absent when there is none."},
				},
			},
			"created_at":   dateTime,
			"completed_at": dateTime,
			"error":        ref("RunError"),
			"attempts":     obj{"type": "array", "items": ref("Attempt")},
			"capped_by": obj{"type": "string", "enum": []any{"balance", "credit_limit"},
				"description": "Present when money capped the records asked of the upstream below `limit`: the available balance (balance minus what calls in flight hold) or the key's credit limit. The run returns (and charges) at most what was reserved."},
		},
		"if":   obj{"properties": obj{"status": obj{"const": "completed"}}},
		"then": obj{"required": []any{"provider"}},
	}
	s["Error"] = obj{
		"type":        "object",
		"description": "Error envelope of every JSON error response.",
		"required":    []any{"error"},
		"properties": obj{
			"error": obj{
				"type":                 "object",
				"required":             []any{"code", "message", "type"},
				"additionalProperties": true,
				"properties": obj{
					"code":                str("Machine-readable error code, e.g. `invalid_input_format`."),
					"message":             str("Human-readable explanation, with the correction when there is one."),
					"type":                str("Error class: `validation`, `authentication`, `billing`, `not_found`, `rate_limit`, `provider`, `timeout`."),
					"run_id":              runID,
					"attempts":            obj{"type": "array", "items": ref("Attempt"), "description": "Offer attempts of the failed run."},
					"available_offers":    stringArray("Offers of the service (`unknown_offer`)."),
					"did_you_mean":        str("Closest service name (`unknown_service`)."),
					"available_services":  stringArray("Services of the platform (`unknown_service`)."),
					"available_platforms": stringArray("The platform identifiers (`unknown_platform`)."),
					"valid_options": obj{"type": "array", "description": "The options the service declares (`invalid_option`).", "items": obj{
						"type":     "object",
						"required": []any{"name", "type"},
						"properties": obj{
							"name":    str(""),
							"type":    obj{"type": "string", "enum": []any{"boolean", "string", "integer", "enum", "date"}},
							"expects": str("The accepted values, in words."),
							"values":  stringArray(""),
						},
					}},
					"invalid_options": obj{"type": "array", "description": "Each refused option (`invalid_option`).", "items": obj{
						"type":       "object",
						"required":   []any{"name", "problem"},
						"properties": obj{"name": str(""), "problem": str("")},
					}},
					"invalid_inputs": obj{"type": "array", "description": "Each refused input (`invalid_input_format`).", "items": obj{
						"type":       "object",
						"required":   []any{"input"},
						"properties": obj{"index": obj{"type": "integer", "minimum": 0}, "input": str("")},
					}},
					"accepts": obj{"type": "array", "description": "The accepted formats (`invalid_input_format`).", "items": obj{
						"type":       "object",
						"properties": obj{"format": str(""), "example": str("")},
					}},
					"allowed_fields": stringArray("The body fields the endpoint takes (`unknown_field`)."),
					"unknown_fields": stringArray("The refused body fields (`unknown_field`)."),
					"max_inputs":     obj{"type": "integer", "minimum": 1, "description": "Inputs per call (`too_many_inputs`)."},
					"input_field":    str("The input field the service takes (`missing_input`, `wrong_input_field`)."),
				},
			},
		},
	}
	s["CatalogueAccept"] = obj{
		"type":     "object",
		"required": []any{"format", "example", "pattern"},
		"properties": obj{
			"format":  str("Accepted shape."),
			"example": str(""),
			"pattern": str("Regular expression (informational)."),
			"note":    str(""),
		},
	}
	s["CatalogueOption"] = obj{
		"type":     "object",
		"required": []any{"name", "type", "description"},
		"properties": obj{
			"name":        str(""),
			"type":        obj{"type": "string", "enum": []any{"boolean", "string", "integer", "enum", "date"}},
			"values":      stringArray("Allowed values (enum) or typical values."),
			"format":      str(""),
			"default":     obj{"description": "Value used when the option is not sent."},
			"description": str(""),
		},
	}
	s["CatalogueOffer"] = obj{
		"type":     "object",
		"required": []any{"offer", "source", "price_per_record", "max_inputs"},
		"properties": obj{
			"offer":            str("Offer id `<source>/<name>`."),
			"source":           str(""),
			"price_per_record": money("Credits per returned record."),
			"max_inputs":       obj{"type": "integer", "minimum": 1, "description": "Inputs per call."},
		},
	}
	s["CatalogueEntry"] = obj{
		"type":        "object",
		"description": "One callable service.",
		"required":    []any{"platform", "service", "endpoint", "input_kind", "input_field", "accepts", "options", "offers"},
		"properties": obj{
			"platform":    ref("Platform"),
			"service":     str(""),
			"endpoint":    str("Path to POST to."),
			"input_kind":  obj{"type": "string", "enum": []any{KindURL, KindQuery}},
			"input_field": obj{"type": "string", "enum": []any{"urls", "queries"}},
			"accepts":     obj{"type": "array", "items": ref("CatalogueAccept"), "description": "An input is valid if it matches any one."},
			"options":     obj{"type": "array", "items": ref("CatalogueOption")},
			"offers":      obj{"type": "array", "items": ref("CatalogueOffer"), "description": "In failover order."},
		},
	}
	s["CatalogueList"] = obj{
		"type":       "object",
		"required":   []any{"data"},
		"properties": obj{"data": obj{"type": "array", "items": ref("CatalogueEntry")}},
	}
	platformList := obj{"type": "array", "items": ref("Platform")}
	s["Source"] = obj{
		"type":        "object",
		"description": "A source (list form).",
		"required":    []any{"id", "name", "description", "status", "platforms", "services_count", "offers_count"},
		"properties": obj{
			"id":             str("Source half of the offer ids it backs."),
			"name":           str(""),
			"description":    str(""),
			"status":         obj{"type": "string", "enum": []any{"active", "degraded", "down", "coming_soon"}},
			"platforms":      obj{"type": "array", "items": ref("Platform"), "description": "Platforms with at least one live offer."},
			"services_count": obj{"type": "integer", "minimum": 0},
			"offers_count":   obj{"type": "integer", "minimum": 0},
		},
	}
	s["PricingRow"] = obj{
		"type":     "object",
		"required": []any{"type", "platforms", "price_per_record"},
		"properties": obj{
			"type":             str("Service name."),
			"platforms":        platformList,
			"price_per_record": money(""),
		},
	}
	s["SourceDetail"] = obj{
		"description": "A source (detail form).",
		"allOf": []any{ref("Source"), obj{
			"type":     "object",
			"required": []any{"supported_platforms", "supported_types", "pricing"},
			"properties": obj{
				"supported_platforms":    platformList,
				"supported_types":        stringArray(""),
				"supported_search_types": stringArray("Omitted when the source has no search coverage."),
				"pricing":                obj{"type": "array", "items": ref("PricingRow")},
				"search_pricing":         obj{"type": "array", "items": ref("PricingRow"), "description": "Omitted when the source has no search coverage."},
			},
		}},
	}
	s["SourceList"] = obj{
		"type":       "object",
		"required":   []any{"data"},
		"properties": obj{"data": obj{"type": "array", "items": ref("Source")}},
	}
	totals := obj{
		"type":     "object",
		"required": []any{"requests", "records", "credits"},
		"properties": obj{
			"requests": obj{"type": "integer", "minimum": 0},
			"records":  obj{"type": "integer", "minimum": 0},
			"credits":  money(""),
		},
	}
	s["UsageTotals"] = totals
	s["Usage"] = obj{
		"type":     "object",
		"required": []any{"period", "total_requests", "total_records", "total_credits", "by_provider", "by_platform"},
		"properties": obj{
			"period":         obj{"type": "string", "pattern": `^[0-9]+d$`, "description": "Look-back, form `<days>d`."},
			"total_requests": obj{"type": "integer", "minimum": 0},
			"total_records":  obj{"type": "integer", "minimum": 0},
			"total_credits":  money(""),
			"by_provider":    obj{"type": "object", "additionalProperties": ref("UsageTotals"), "description": "Keyed by the offer that served each run."},
			"by_platform":    obj{"type": "object", "additionalProperties": ref("UsageTotals"), "propertyNames": ref("Platform")},
		},
	}
	s["Balance"] = obj{
		"type":     "object",
		"required": []any{"balance", "currency"},
		"properties": obj{
			"balance":  obj{"type": "number", "description": "Credits left (1 credit = 1 USD)."},
			"currency": obj{"const": "USD"},
		},
	}
}

// summary is the first sentence of a description.
func summary(desc, fallback string) string {
	desc = strings.TrimSpace(desc)
	if desc == "" {
		return fallback
	}
	if i := strings.IndexAny(desc, "\n"); i >= 0 {
		desc = desc[:i]
	}
	if i := strings.Index(desc, ". "); i >= 0 {
		desc = desc[:i]
	}
	return strings.TrimSuffix(strings.TrimSpace(desc), ".")
}

func (b *openapiBuilder) extractOperation(s *Service) (obj, error) {
	rec, err := b.record(s.Record)
	if err != nil {
		return nil, fmt.Errorf("service %s: %v", s.Key, err)
	}
	offers := s.LiveOffers()
	maxInputs := 0
	ids := make([]any, 0, len(offers))
	var offerLines []string
	for _, o := range offers {
		maxInputs = max(maxInputs, o.MaxInputs)
		ids = append(ids, o.ID)
		offerLines = append(offerLines, fmt.Sprintf("- `%s`: %s credits per record, up to %d inputs per call", o.ID, o.Price, o.MaxInputs))
	}
	many, one := s.InputField(), s.SingleInputField()

	// An input is valid when it matches any accept: it has a length cap only
	// when every accept declares one.
	maxLen := 0
	var examples []any
	var acceptLines []string
	for _, a := range s.Accepts {
		if a.MaxLength <= 0 {
			maxLen = -1
		} else if maxLen >= 0 {
			maxLen = max(maxLen, a.MaxLength)
		}
		examples = append(examples, a.Example)
		line := fmt.Sprintf("- %s, e.g. `%s`", a.Format, a.Example)
		if a.Note != "" {
			line += " (" + a.Note + ")"
		}
		acceptLines = append(acceptLines, line)
	}
	item := func() obj {
		o := obj{"type": "string", "minLength": 1}
		if maxLen > 0 {
			o["maxLength"] = maxLen
		}
		if len(examples) > 0 {
			o["examples"] = examples
		}
		return o
	}
	single := item()
	single["description"] = fmt.Sprintf("Single-input form of `%s`.", many)
	options, err := optionsSchema(s)
	if err != nil {
		return nil, fmt.Errorf("service %s: %v", s.Key, err)
	}
	body := obj{
		"type":                 "object",
		"additionalProperties": false,
		"properties": obj{
			many: obj{
				"type":        "array",
				"items":       item(),
				"minItems":    1,
				"maxItems":    maxInputs,
				"description": fmt.Sprintf("Inputs (%s-kind service); each must match an accepted format, else 400 `invalid_input_format` before routing and billing.", s.InputKind),
			},
			one: single,
			"provider": obj{
				"type":        "string",
				"enum":        ids,
				"description": "Pin one offer (disables failover). Omitted: the router walks the offers in failover order.",
			},
			"limit": obj{
				"type": "integer", "minimum": 1, "maximum": extractLimitMax, "default": limitDefault,
				"description": fmt.Sprintf("Maximum records returned (%s).", strings.ReplaceAll(s.LimitScope, "_", " ")),
			},
			"options": options,
		},
		"oneOf": []any{obj{"required": []any{many}}, obj{"required": []any{one}}},
	}
	example := obj{many: []any{}}
	if len(s.Accepts) > 0 {
		example[many] = []any{s.Accepts[0].Example}
	}
	desc := strings.TrimSpace(s.Description) + "\n\n" +
		fmt.Sprintf("Canonical path: `POST /v1/extract/%s/%s`; this path is an alias served identically.\n\n", s.Platform, s.Name) +
		fmt.Sprintf("Accepted inputs (`%s` or `%s`); an input is valid if it matches any one:\n%s\n\n", many, one, strings.Join(acceptLines, "\n")) +
		"Offers in failover order:\n" + strings.Join(offerLines, "\n")
	return obj{
		"operationId":      "run_" + s.Platform + "_" + strings.ReplaceAll(s.Name, ".", "_"),
		"summary":          summary(s.Description, s.Key),
		"description":      desc,
		"tags":             []any{s.Platform},
		"security":         []any{obj{"bearer": []any{}}},
		"x-canonical-path": "/v1/extract/" + s.Platform + "/" + s.Name,
		"requestBody": obj{
			"required": true,
			"content":  obj{"application/json": obj{"schema": body, "example": example}},
		},
		"responses": obj{
			"200": obj{
				"description": "The completed run; `data` holds the service's records.",
				"content": jsonContent(obj{"allOf": []any{ref("Run"), obj{
					"properties": obj{
						"status":   obj{"const": "completed"},
						"platform": obj{"const": s.Platform},
						"service":  obj{"const": s.Name},
						"data":     obj{"items": ref(rec)},
					},
				}}}),
			},
			"400": respRef("BadRequest"),
			"401": respRef("Unauthorized"),
			"402": respRef("PaymentRequired"),
			"404": respRef("NotFound"),
			"413": respRef("PayloadTooLarge"),
			"429": respRef("TooManyRequests"),
			"502": respRef("BadGateway"),
			"503": respRef("ServiceUnavailable"),
			"504": respRef("GatewayTimeout"),
		},
	}, nil
}

// optionsSchema is the strict schema of a service's options object.
func optionsSchema(s *Service) (obj, error) {
	if len(s.Options) == 0 {
		return obj{
			"type": "object", "additionalProperties": false, "maxProperties": 0,
			"description": "This service declares no options: any key is refused with 400.",
		}, nil
	}
	props := obj{}
	for _, o := range s.Options {
		var p obj
		switch o.Type {
		case "boolean":
			p = obj{"type": "boolean"}
		case "integer":
			p = obj{"type": "integer"}
		case "string":
			p = obj{"type": "string"}
			if len(o.Values) > 0 {
				p["examples"] = anySlice(o.Values)
			}
		case "enum":
			p = obj{"type": "string", "enum": anySlice(o.Values)}
		case "date":
			p = obj{"type": "string", "format": "date", "pattern": datePattern}
		default:
			return nil, fmt.Errorf("option %s: unknown type %q", o.Name, o.Type)
		}
		desc := o.Description
		if o.Format != "" && o.Type != "date" {
			desc += " Format: " + o.Format + "."
		}
		p["description"] = desc
		if o.HasDefault {
			p["default"] = o.Default
		}
		props[o.Name] = p
	}
	return obj{
		"type": "object", "additionalProperties": false, "properties": props,
		"description": "Service-declared typed options. Strict: an unknown key, a wrong type or an out-of-enum value is refused with 400 `invalid_option`. An offer that does not implement an option ignores it.",
	}, nil
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (b *openapiBuilder) searchOperation() (obj, error) {
	slugs := b.r.SearchSlugs()
	providerDesc := "Provider slug `<source>/<platform>/<type>[:<tag>]`; `<type>` must be a search type (an extraction type returns 400 `wrong_endpoint`)."
	provider := obj{"type": "string", "pattern": searchPattern}
	if len(slugs) > 0 {
		quoted := make([]string, len(slugs))
		for i, sl := range slugs {
			quoted[i] = "`" + sl + "`"
		}
		providerDesc += " Valid slugs: " + strings.Join(quoted, ", ") + "."
		provider["examples"] = anySlice(slugs)
	} else {
		providerDesc += " No search type is currently served."
	}
	provider["description"] = providerDesc

	// Records of the search types, for the response's data items.
	var recs []any
	seen := map[string]bool{}
	for _, s := range b.r.SearchTypes() {
		if len(s.LiveOffers()) == 0 {
			continue
		}
		name, err := b.record(s.Record)
		if err != nil {
			return nil, fmt.Errorf("search type %s: %v", s.Key, err)
		}
		if !seen[name] {
			seen[name] = true
			recs = append(recs, ref(name))
		}
	}
	run := obj{"$ref": schemaPrefix + "SearchRun"}
	switch len(recs) {
	case 0:
	case 1:
		run = obj{"allOf": []any{ref("SearchRun"), obj{"properties": obj{"data": obj{"items": recs[0]}}}}}
	default:
		run = obj{"allOf": []any{ref("SearchRun"), obj{"properties": obj{"data": obj{"items": obj{"anyOf": recs}}}}}}
	}
	body := obj{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"queries", "provider"},
		"properties": obj{
			"queries": obj{
				"type": "array", "minItems": 1, "items": obj{"type": "string"},
				"description": "Plain terms or URLs that pin the search context. Missing or empty: 400 `missing_queries`.",
			},
			"provider": provider,
			"limit": obj{
				"type": "integer", "minimum": 1, "maximum": searchLimitMax, "default": limitDefault,
				"description": "Per-query cap on returned records.",
			},
			"fallback": obj{
				"type": "boolean", "default": true,
				"description": "When false only the requested provider is attempted and its error is returned directly.",
			},
			"options": obj{
				"type": "object", "additionalProperties": true,
				"description": "Per-offer input overrides; unknown keys are dropped.",
			},
			"cursor": str("Opaque `pagination.next_cursor` of a previous search run, to fetch its next page."),
		},
	}
	return obj{
		"operationId": "search",
		"summary":     "Run a search type selected by a provider slug",
		"description": "Query-kind search with an explicit provider slug. With `fallback` (the default) the router may try other offers of the same search type.",
		"tags":        []any{"search"},
		"security":    []any{obj{"bearer": []any{}}},
		"requestBody": obj{"required": true, "content": jsonContent(body)},
		"responses": obj{
			"200": obj{"description": "The search run.", "content": jsonContent(run)},
			"400": respRef("BadRequest"),
			"401": respRef("Unauthorized"),
			"402": respRef("PaymentRequired"),
			"413": respRef("PayloadTooLarge"),
			"429": respRef("TooManyRequests"),
			"502": respRef("BadGateway"),
			"503": respRef("ServiceUnavailable"),
			"504": respRef("GatewayTimeout"),
		},
	}, nil
}

func (b *openapiBuilder) runsAndAccount(paths obj) {
	auth := []any{obj{"bearer": []any{}}}
	paths["/v1/extractions/{id}"] = obj{"get": obj{
		"operationId": "get_run",
		"summary":     "Get a run",
		"description": "Returns a run of the authenticated account (extract or search). A run id of another account behaves as nonexistent: 404 `not_found`.",
		"tags":        []any{"runs"},
		"security":    auth,
		"parameters": []any{obj{
			"name": "id", "in": "path", "required": true,
			"schema": obj{"type": "string", "pattern": "^ext_"}, "description": "Run id `ext_<id>`.",
		}},
		"responses": obj{
			"200": obj{"description": "The run.", "content": jsonContent(obj{"oneOf": []any{ref("Run"), ref("SearchRun")}})},
			"401": respRef("Unauthorized"),
			"404": respRef("NotFound"),
			"429": respRef("TooManyRequests"),
			"503": respRef("ServiceUnavailable"),
		},
	}}
	paths["/v1/account/usage"] = obj{"get": obj{
		"operationId": "get_usage",
		"summary":     "Usage summary",
		"description": "Usage of the authenticated account over the look-back; `by_provider` is keyed by the offer that actually served each run.",
		"tags":        []any{"account"},
		"security":    auth,
		"parameters": []any{obj{
			"name": "days", "in": "query", "required": false,
			"schema":      obj{"type": "integer", "minimum": 1, "maximum": 365, "default": 30},
			"description": "Look-back in days; any other value returns 400 `invalid_days`.",
		}},
		"responses": obj{
			"200": obj{"description": "The usage summary.", "content": jsonContent(ref("Usage"))},
			"400": respRef("BadRequest"),
			"401": respRef("Unauthorized"),
			"429": respRef("TooManyRequests"),
			"503": respRef("ServiceUnavailable"),
		},
	}}
	paths["/v1/account/balance"] = obj{"get": obj{
		"operationId": "get_balance",
		"summary":     "Balance",
		"tags":        []any{"account"},
		"security":    auth,
		"responses": obj{
			"200": obj{"description": "The balance.", "content": jsonContent(ref("Balance"))},
			"401": respRef("Unauthorized"),
			"429": respRef("TooManyRequests"),
			"503": respRef("ServiceUnavailable"),
		},
	}}
}

func (b *openapiBuilder) catalogue(paths obj) {
	public := []any{}
	platformParam := obj{
		"name": "platform", "in": "path", "required": true,
		"schema": ref("Platform"), "description": "Platform identifier.",
	}
	get := func(id, sum, desc string, params []any, ok obj, notFound bool) obj {
		op := obj{
			"operationId": id,
			"summary":     sum,
			"tags":        []any{"catalogue"},
			"security":    public,
			"responses": obj{
				"200": ok,
				"429": respRef("TooManyRequests"),
			},
		}
		if desc != "" {
			op["description"] = desc
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if notFound {
			op["responses"].(obj)["404"] = respRef("NotFound")
		}
		return obj{"get": op}
	}
	paths["/v1/services"] = get("list_services", "Service catalogue",
		"Every callable service, derived at runtime from the registry the router dispatches on.", nil,
		obj{"description": "The catalogue.", "content": jsonContent(ref("CatalogueList"))}, false)
	paths["/v1/services/{platform}"] = get("list_platform_services", "Services of one platform",
		"Unknown platform: 404 `unknown_platform` (the message lists the valid platforms).", []any{platformParam},
		obj{"description": "The platform's catalogue.", "content": jsonContent(ref("CatalogueList"))}, true)
	paths["/v1/services/{platform}/{service}"] = get("get_service", "One catalogue entry",
		"Errors: 404 `unknown_service` (with `did_you_mean`), 404 `service_not_available`.",
		[]any{platformParam, obj{
			"name": "service", "in": "path", "required": true,
			"schema": obj{"type": "string"}, "description": "Service name, e.g. `company.info`.",
		}},
		obj{"description": "The catalogue entry (not wrapped).", "content": jsonContent(ref("CatalogueEntry"))}, true)
	paths["/v1/providers"] = get("list_providers", "Sources", "", nil,
		obj{"description": "Every source in list form.", "content": jsonContent(ref("SourceList"))}, false)
	paths["/v1/providers/{id}"] = get("get_provider", "One source", "Unknown id: 404 `not_found`.",
		[]any{obj{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "Source id, e.g. `source_a`."}},
		obj{"description": "The source in detail form.", "content": jsonContent(ref("SourceDetail"))}, true)
	paths["/v1/openapi.json"] = get("get_openapi", "This description",
		"OpenAPI 3.1 description, one path per callable service.", nil,
		obj{"description": "The OpenAPI document.", "content": jsonContent(obj{"type": "object"})}, false)
}

// record adds the record definition's schema to the components (once) and
// returns its component name.
//
// The schema generated from CUE keeps its helper definitions under $defs
// with refs "#/$defs/X", which would resolve against the document root once
// embedded: they are hoisted into components.schemas and the refs rewritten.
// An embedded definition (CUE `#Rec: {#Common, extra?: string}`) comes out as
// a $ref beside sibling properties; since the referenced definition is
// closed on its own, JSON Schema would refuse the sibling fields, so such
// a $ref is merged into its siblings, as CUE unifies the embedding.
func (b *openapiBuilder) record(def string) (string, error) {
	if name, ok := b.recordRefs[def]; ok {
		return name, nil
	}
	raw, ok := b.r.views.records[def]
	if !ok || raw == nil {
		return "", fmt.Errorf("record definition %s has no schema", def)
	}
	root := deepCopy(raw).(obj)
	defs, _ := root["$defs"].(obj)
	delete(root, "$defs")

	n := &defNormalizer{defs: defs, done: map[string]any{}, busy: map[string]bool{}}
	rootN, err := n.normalize(root)
	if err != nil {
		return "", fmt.Errorf("record %s: %v", def, err)
	}
	// Definitions still referenced after merging, transitively.
	used := map[string]bool{}
	var walkErr error
	var collect func(v any)
	collect = func(v any) {
		forEachRef(v, func(target string) {
			if used[target] || walkErr != nil {
				return
			}
			used[target] = true
			d, err := n.def(target)
			if err != nil {
				walkErr = err
				return
			}
			collect(d)
		})
	}
	collect(rootN)
	if walkErr != nil {
		return "", fmt.Errorf("record %s: %v", def, walkErr)
	}

	// Hoist each definition under its own name when that is free or holds
	// the same schema (definitions shared by several records are hoisted
	// once); otherwise under the first free name X2, X3, ….
	names := sortedKeys(used)
	mapping := map[string]string{}
	for _, d := range names {
		mapping[d] = d
	}
	base := strings.TrimPrefix(def, "#")
	var hoisted map[string]any
	for {
		hoisted = map[string]any{}
		for _, d := range names {
			dv, _ := n.def(d)
			hoisted[d] = rewriteRefs(deepCopy(dv), mapping)
		}
		taken := map[string]bool{base: true}
		changed := false
		for _, d := range names {
			name := mapping[d]
			prev, exists := b.schemas[name]
			if !taken[name] && (!exists || sameSchema(prev, hoisted[d])) {
				taken[name] = true
				continue
			}
			for i := 2; ; i++ {
				cand := fmt.Sprintf("%s%d", d, i)
				prev, exists := b.schemas[cand]
				if !taken[cand] && (!exists || sameSchema(prev, hoisted[d])) && cand != name {
					mapping[d] = cand
					break
				}
			}
			changed = true
			break
		}
		if !changed {
			break
		}
	}
	for _, d := range names {
		if _, exists := b.schemas[mapping[d]]; !exists {
			b.schemas[mapping[d]] = hoisted[d]
		}
	}
	recSchema := rewriteRefs(rootN, mapping)
	recName := base
	for i := 2; ; i++ {
		prev, exists := b.schemas[recName]
		if !exists || sameSchema(prev, recSchema) {
			break
		}
		recName = fmt.Sprintf("%sRecord%d", base, i)
	}
	if _, exists := b.schemas[recName]; !exists {
		b.schemas[recName] = recSchema
	}
	b.recordRefs[def] = recName
	return recName, nil
}

// sameSchema reports whether two schemas validate the same instances, as
// far as it matters for sharing one component: annotations aside, and an
// enum of strings with or without its type.
func sameSchema(a, b any) bool {
	return reflect.DeepEqual(canonicalSchema(a), canonicalSchema(b))
}

func canonicalSchema(v any) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = canonicalSchema(x)
		}
		return out
	case obj:
		out := obj{}
		for k, x := range t {
			switch k {
			case "description", "title", "examples", "example":
				continue
			}
			out[k] = canonicalSchema(x)
		}
		if enum, ok := out["enum"].([]any); ok && out["type"] == "string" {
			allStrings := true
			for _, e := range enum {
				if _, ok := e.(string); !ok {
					allStrings = false
				}
			}
			if allStrings {
				delete(out, "type")
			}
		}
		return out
	}
	return v
}

// defNormalizer merges embedding refs of one generated record schema.
type defNormalizer struct {
	defs obj
	done map[string]any
	busy map[string]bool
}

// def returns the normalized definition named name.
func (n *defNormalizer) def(name string) (any, error) {
	if d, ok := n.done[name]; ok {
		return d, nil
	}
	raw, ok := n.defs[name]
	if !ok {
		return nil, fmt.Errorf("$ref to undefined definition %q", name)
	}
	if n.busy[name] {
		return nil, fmt.Errorf("definition %q embeds itself", name)
	}
	n.busy[name] = true
	d, err := n.normalize(deepCopy(raw))
	delete(n.busy, name)
	if err != nil {
		return nil, err
	}
	n.done[name] = d
	return d, nil
}

// embedKeys are the sibling keys that make a $ref an embedding.
var embedKeys = []string{"properties", "patternProperties", "additionalProperties", "required"}

func (n *defNormalizer) normalize(v any) (any, error) {
	switch t := v.(type) {
	case []any:
		for i := range t {
			x, err := n.normalize(t[i])
			if err != nil {
				return nil, err
			}
			t[i] = x
		}
		return t, nil
	case obj:
		for k, x := range t {
			y, err := n.normalize(x)
			if err != nil {
				return nil, err
			}
			t[k] = y
		}
		r, isStr := t["$ref"].(string)
		if !isStr {
			return t, nil
		}
		target, ok := strings.CutPrefix(r, "#/$defs/")
		if !ok {
			return nil, fmt.Errorf("unsupported $ref %q", r)
		}
		embedded := false
		for _, k := range embedKeys {
			if _, has := t[k]; has {
				embedded = true
			}
		}
		if !embedded {
			return t, nil
		}
		d, err := n.def(target)
		if err != nil {
			return nil, err
		}
		base, isObj := d.(obj)
		if !isObj || !mergeable(base) {
			return t, nil
		}
		delete(t, "$ref")
		return mergeEmbedding(deepCopy(base).(obj), t), nil
	}
	return v, nil
}

// mergeable reports whether an object schema can be merged into an
// embedding: it must be a plain object schema.
func mergeable(s obj) bool {
	for k := range s {
		switch k {
		case "type", "properties", "patternProperties", "additionalProperties", "required", "description", "title":
		default:
			return false
		}
	}
	return s["type"] == nil || s["type"] == "object"
}

// mergeEmbedding unifies an embedded object schema into the embedding one:
// properties of both (a property declared by both must satisfy both), the
// union of required, and the embedding's closedness.
func mergeEmbedding(base, outer obj) obj {
	out := obj{}
	for k, v := range base {
		out[k] = v
	}
	for _, k := range []string{"properties", "patternProperties"} {
		bp, _ := base[k].(obj)
		op, _ := outer[k].(obj)
		if bp == nil && op == nil {
			continue
		}
		m := obj{}
		for name, s := range bp {
			m[name] = s
		}
		for name, s := range op {
			if prev, ok := m[name]; ok && !reflect.DeepEqual(prev, s) {
				m[name] = obj{"allOf": []any{prev, s}}
			} else {
				m[name] = s
			}
		}
		out[k] = m
	}
	if br, or := base["required"], outer["required"]; br != nil || or != nil {
		set := map[string]bool{}
		for _, l := range []any{br, or} {
			list, _ := l.([]any)
			for _, x := range list {
				if s, ok := x.(string); ok {
					set[s] = true
				}
			}
		}
		out["required"] = anySlice(sortedKeys(set))
	}
	for k, v := range outer {
		switch k {
		case "properties", "patternProperties", "required":
		default:
			out[k] = v
		}
	}
	if _, ok := outer["additionalProperties"]; !ok {
		// The embedding is open unless it says otherwise.
		delete(out, "additionalProperties")
	}
	return out
}

// forEachRef calls fn with the target of every "#/$defs/X" ref under v.
func forEachRef(v any, fn func(string)) {
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			forEachRef(x, fn)
		}
	case obj:
		if r, ok := t["$ref"].(string); ok {
			if target, ok := strings.CutPrefix(r, "#/$defs/"); ok {
				fn(target)
			}
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			forEachRef(t[k], fn)
		}
	}
}

// rewriteRefs points "#/$defs/X" refs at the hoisted component names.
func rewriteRefs(v any, names map[string]string) any {
	switch t := v.(type) {
	case []any:
		for i := range t {
			t[i] = rewriteRefs(t[i], names)
		}
	case obj:
		for k, x := range t {
			t[k] = rewriteRefs(x, names)
		}
		if r, ok := t["$ref"].(string); ok {
			if target, ok := strings.CutPrefix(r, "#/$defs/"); ok {
				t["$ref"] = schemaPrefix + names[target]
			}
		}
	}
	return v
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	case obj:
		out := make(obj, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	}
	return v
}
