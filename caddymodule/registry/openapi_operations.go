package registry

import (
	"fmt"
	"socialrouter/caddymodule/limits"
	"strings"
)

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

	maxLen := s.MaxInputLength()
	var examples []any
	var acceptLines []string
	for _, a := range s.Accepts {
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
				"type": "integer", "minimum": 1, "maximum": limits.ExtractLimitMax, "default": limits.LimitDefault,
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
	responses := runResponses(obj{
		"description": "The completed run; `data` holds the service's records.",
		"content": jsonContent(obj{"allOf": []any{ref("Run"), obj{
			"properties": obj{
				"status":   obj{"const": "completed"},
				"platform": obj{"const": s.Platform},
				"service":  obj{"const": s.Name},
				"data":     obj{"items": ref(rec)},
			},
		}}}),
	})
	responses["404"] = respRef("NotFound")
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
		"responses": responses,
	}, nil
}

// runResponses are the answers of a run call, extract or search: ok, and
// the errors both can answer.
func runResponses(ok obj) obj {
	return obj{
		"200": ok,
		"400": respRef("BadRequest"),
		"401": respRef("Unauthorized"),
		"402": respRef("PaymentRequired"),
		"413": respRef("PayloadTooLarge"),
		"429": respRef("TooManyRequests"),
		"502": respRef("BadGateway"),
		"503": respRef("ServiceUnavailable"),
		"504": respRef("GatewayTimeout"),
	}
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
	providerDesc := "Provider slug `<source>/<platform>/<type>[:<tag>]`; `<type>` must be a search type (an extraction type returns 400 `wrong_endpoint`). The optional tag names the source's offer (`source_a/maps/place.search:actor_3`); a tag the source has no offer of returns 400 `unknown_provider`."
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
				"type": "integer", "minimum": 1, "default": limits.LimitDefault,
				"description": fmt.Sprintf("Per-query cap on returned records; a larger value is capped at %d (SPEC), not refused.", limits.SearchLimitMax),
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
		"responses":   runResponses(obj{"description": "The search run.", "content": jsonContent(run)}),
	}, nil
}

func (b *openapiBuilder) runsAndAccount(paths obj) {
	auth := []any{obj{"bearer": []any{}}}
	// get is an authenticated GET of tag answering ok, the errors every
	// such call can answer, and errs.
	get := func(id, sum, desc, tag string, params []any, ok obj, errs obj) obj {
		responses := obj{
			"200": ok,
			"401": respRef("Unauthorized"),
			"429": respRef("TooManyRequests"),
			"503": respRef("ServiceUnavailable"),
		}
		for code, r := range errs {
			responses[code] = r
		}
		op := obj{"operationId": id, "summary": sum, "tags": []any{tag}, "security": auth, "responses": responses}
		if desc != "" {
			op["description"] = desc
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		return obj{"get": op}
	}
	paths["/v1/extractions/{id}"] = get("get_run", "Get a run",
		"Returns a run of the authenticated account (extract or search). A run id of another account behaves as nonexistent: 404 `not_found`. "+
			"Where the gateway sets `run_retention`, a run older than it answers 200 with `data: []`, `records_expired: true` and `expired_at` (`RunExpiry`): its records were deleted, its billing facts kept.",
		"runs", []any{obj{
			"name": "id", "in": "path", "required": true,
			"schema": obj{"type": "string", "pattern": "^ext_"}, "description": "Run id `ext_<id>`.",
		}},
		obj{"description": "The run.", "content": jsonContent(obj{"allOf": []any{obj{"oneOf": []any{ref("Run"), ref("SearchRun")}}, ref("RunExpiry")}})},
		obj{"404": respRef("NotFound")})
	paths["/v1/account/usage"] = get("get_usage", "Usage summary",
		"Usage of the authenticated account over the look-back; `by_provider` is keyed by the offer that actually served each run.",
		"account", []any{obj{
			"name": "days", "in": "query", "required": false,
			"schema":      obj{"type": "integer", "minimum": 1, "maximum": limits.UsageDaysMax, "default": limits.UsageDaysDefault},
			"description": "Look-back in days; any other value returns 400 `invalid_days`.",
		}},
		obj{"description": "The usage summary.", "content": jsonContent(ref("Usage"))},
		obj{"400": respRef("BadRequest")})
	paths["/v1/account/balance"] = get("get_balance", "Balance", "", "account", nil,
		obj{"description": "The balance.", "content": jsonContent(ref("Balance"))}, nil)
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
