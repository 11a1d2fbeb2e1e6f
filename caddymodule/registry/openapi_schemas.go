package registry

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
	// runProps adds to props the properties of every run, extract or search.
	runProps := func(props obj) obj {
		props["created_at"] = dateTime
		props["completed_at"] = dateTime
		props["error"] = ref("RunError")
		props["attempts"] = obj{"type": "array", "items": ref("Attempt")}
		props["livemode"] = obj{"type": "boolean", "description": "`false` for a run of a test key (`<prefix>_test_…`: records from the offers' example payloads, no upstream, the test balance; docs/testmode.md), `true` for a live run. Absent only on runs stored before test mode existed, which are live."}
		props["cached_records"] = obj{"type": "integer", "minimum": 1,
			"description": "Present when records came from the freshness cache or another call's live work (Cache-Control: max-age): how many of `data`, billed at their offer's `cached_price_per_record`. The answer's `Age` header is the age in seconds of the oldest record served."}
		props["capped_by"] = obj{"type": "string", "enum": []any{"balance", "credit_limit"},
			"description": "Present when money capped the records asked of the upstream below `limit`: the available balance (balance minus what calls in flight hold) or the key's credit limit. The run returns (and charges) at most what was reserved."}
		return props
	}

	s["RunExpiry"] = obj{"type": "object",
		"description": "What GET /v1/extractions/{id} adds to a run whose records the gateway's `run_retention` deleted: " +
			"`data` is then `[]` while the billing facts (`credits_used`, `pagination` counts, `served_by`, timestamps, `attempts`) stay as settled.",
		"properties": obj{
			"records_expired": obj{"type": "boolean", "description": "Present (true) once the run's records were deleted."},
			"expired_at":      obj{"type": "string", "format": "date-time", "description": "When they were deleted."},
		}}
	s["Attempt"] = object("One offer attempt of a run, for tracing paid upstream work.", []any{"offer", "outcome", "duration_ms"}, obj{
		"offer":       str("Offer id `<source>/<name>`."),
		"outcome":     str("Outcome of the attempt, e.g. `ok`, `upstream_5xx`, `timeout`; `circuit_open` and `unpayable` are offers skipped without a call (breaker open; not one record of the offer payable from the balance or the key's credit limit); `partial` is an attempt that served some of its batches (their records are kept and billed at this offer's price) while the inputs of the failed batch, named in `message`, went on to the next offer."),
		"status":      integer("Upstream HTTP status, when one was received."),
		"duration_ms": obj{"type": "integer", "minimum": 0, "description": "Duration of the attempt in milliseconds."},
		"handles":     stringArray("Upstream run or snapshot ids of the attempt's calls."),
		"message":     str("Upstream or router message."),
		"records":     obj{"type": "integer", "minimum": 0, "description": "Records the attempt produced."},
	})
	s["RunError"] = object("Error of a failed run.", []any{"code", "type", "message"}, obj{"code": str(""), "type": str(""), "message": str("")})
	s["Run"] = obj{
		"type":        "object",
		"description": "Result of a call to an extract service.",
		"required":    []any{"id", "status", "platform", "service", "url", "credits_used", "data", "pagination", "created_at", "completed_at"},
		"properties": runProps(obj{
			"id":           runID,
			"status":       obj{"type": "string", "enum": []any{"completed", "failed"}},
			"platform":     ref("Platform"),
			"service":      str("Service name, e.g. `profile.info`."),
			"url":          str("For url-kind services the input url; for query-kind services the first query."),
			"queries":      stringArray("Query-kind runs: the original list of queries."),
			"served_by":    str("Offer id that actually ran (after any failover); on a failed run the last offer tried."),
			"credits_used": money("Actual charge of the run."),
			"data":         obj{"type": "array", "items": obj{"type": "object"}, "description": "Normalized records; a field is present only when the platform exposes it."},
			"pagination": object("", []any{"total", "returned"}, obj{
				"total":    obj{"type": "integer", "minimum": 0, "description": "Records produced."},
				"returned": obj{"type": "integer", "minimum": 0, "description": "Records in `data`."},
			}),
		}),
		"if":   obj{"properties": obj{"status": obj{"const": "completed"}}},
		"then": obj{"required": []any{"served_by"}},
		"else": obj{"required": []any{"error"}},
	}
	s["SearchRun"] = obj{
		"type":        "object",
		"description": "Result of POST /v1/search.",
		"required":    []any{"id", "kind", "status", "source", "type", "url", "queries", "credits_used", "data", "pagination", "created_at", "completed_at"},
		"properties": runProps(obj{
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
			"pagination": object("", []any{"total", "returned"}, obj{
				"total":       obj{"type": "integer", "minimum": 0},
				"returned":    obj{"type": "integer", "minimum": 0},
				"next_cursor": obj{"type": []any{"string", "null"}, "description": "Opaque cursor of the next page (`cursor` of the next request); null or absent when there is none."},
			}),
		}),
		"if":   obj{"properties": obj{"status": obj{"const": "completed"}}},
		"then": obj{"required": []any{"provider"}},
	}
	s["Error"] = object("Error envelope of every JSON error response.", []any{"error"}, obj{
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
				"available_services":  stringArray("Callable services of the platform (`unknown_service`)."),
				"endpoint":            str("Where the request belongs (`wrong_endpoint`; `unknown_service` of a search type: `/v1/search`)."),
				"reason":              obj{"type": "string", "enum": []any{"disk_full", "write_failed"}, "description": "Why the store cannot write (`store_unavailable` before any upstream call): its filesystem's free space is below the reserve or its database's disk is full, or a write failed and none has succeeded since."},
				"valid_providers":     stringArray("The search provider slugs (`missing_provider`, `unknown_provider`)."),
				"available_platforms": stringArray("The platform identifiers (`unknown_platform`)."),
				"valid_options": obj{"type": "array", "description": "The options the service declares (`invalid_option`).", "items": object("", []any{"name", "type"}, obj{
					"name":    str(""),
					"type":    obj{"type": "string", "enum": []any{"boolean", "string", "integer", "enum", "date"}},
					"expects": str("The accepted values, in words."),
					"values":  stringArray(""),
				})},
				"invalid_options": obj{"type": "array", "description": "Each refused option (`invalid_option`).", "items": object("", []any{"name", "problem"}, obj{"name": str(""), "problem": str("")})},
				"invalid_inputs":  obj{"type": "array", "description": "Each refused input (`invalid_input_format`).", "items": object("", []any{"input"}, obj{"index": obj{"type": "integer", "minimum": 0}, "input": str(""), "problem": str("Why, when the input has an accepted shape but breaks a limit (its length).")})},
				"accepts": obj{"type": "array", "description": "The accepted formats (`invalid_input_format`).", "items": obj{
					"type":       "object",
					"properties": obj{"format": str(""), "example": str(""), "note": str("")},
				}},
				"allowed_fields": stringArray("The body fields the endpoint takes (`unknown_field`)."),
				"unknown_fields": stringArray("The refused body fields (`unknown_field`)."),
				"max_inputs":     obj{"type": "integer", "minimum": 1, "description": "Inputs per call (`too_many_inputs`)."},
				"input_field":    str("The input field the service takes (`missing_input`, `wrong_input_field`)."),
			},
		},
	})
	s["CatalogueAccept"] = object("", []any{"format", "example", "pattern"}, obj{
		"format":  str("Accepted shape."),
		"example": str(""),
		"pattern": str("Regular expression (informational)."),
		"note":    str(""),
	})
	s["CatalogueOption"] = object("", []any{"name", "type", "description"}, obj{
		"name":        str(""),
		"type":        obj{"type": "string", "enum": []any{"boolean", "string", "integer", "enum", "date"}},
		"values":      stringArray("Allowed values (enum) or typical values."),
		"format":      str(""),
		"default":     obj{"description": "Value used when the option is not sent."},
		"description": str(""),
	})
	s["CatalogueOffer"] = object("", []any{"offer", "source", "price_per_record", "max_inputs"}, obj{
		"offer":                   str("Offer id `<source>/<name>`."),
		"source":                  str(""),
		"price_per_record":        money("Credits per returned record."),
		"max_inputs":              obj{"type": "integer", "minimum": 1, "description": "Inputs per call."},
		"cached_price_per_record": money("Credits per record served from the freshness cache (services with `cache`)."),
	})
	s["CatalogueEntry"] = object("One callable service.", []any{"platform", "service", "endpoint", "input_kind", "input_field", "accepts", "options", "offers"}, obj{
		"platform": ref("Platform"),
		"service":  str(""),
		"endpoint": str("Path to POST to."),
		"cache": object("Present when the service's records may be served again from the freshness cache: `Cache-Control: max-age=<s>` accepts records up to that age, `no-cache` forces live work.", []any{"keep", "default_max_age"}, obj{
			"keep":            integer("Seconds records are kept for reuse."),
			"default_max_age": integer("Age in seconds a call without Cache-Control accepts (0: live work)."),
		}),
		"input_kind":  obj{"type": "string", "enum": []any{KindURL, KindQuery}},
		"input_field": obj{"type": "string", "enum": []any{"urls", "queries"}},
		"accepts":     obj{"type": "array", "items": ref("CatalogueAccept"), "description": "An input is valid if it matches any one."},
		"options":     obj{"type": "array", "items": ref("CatalogueOption")},
		"offers":      obj{"type": "array", "items": ref("CatalogueOffer"), "description": "In failover order."},
	})
	s["CatalogueList"] = object("", []any{"data"}, obj{"data": obj{"type": "array", "items": ref("CatalogueEntry")}})
	platformList := obj{"type": "array", "items": ref("Platform")}
	s["Source"] = object("A source (list form).", []any{"id", "name", "description", "status", "platforms", "services_count", "offers_count"}, obj{
		"id":             str("Source half of the offer ids it backs."),
		"name":           str(""),
		"description":    str(""),
		"status":         obj{"type": "string", "enum": []any{"active", "degraded", "down", "coming_soon"}},
		"platforms":      obj{"type": "array", "items": ref("Platform"), "description": "Platforms with at least one live offer."},
		"services_count": obj{"type": "integer", "minimum": 0},
		"offers_count":   obj{"type": "integer", "minimum": 0},
	})
	s["PricingRow"] = object("", []any{"type", "platforms", "price_per_record"}, obj{
		"type":             str("Service name."),
		"platforms":        platformList,
		"price_per_record": money(""),
	})
	s["SourceDetail"] = obj{
		"description": "A source (detail form).",
		"allOf": []any{ref("Source"), object("", []any{"supported_platforms", "supported_types", "pricing"}, obj{
			"supported_platforms":    platformList,
			"supported_types":        stringArray(""),
			"supported_search_types": stringArray("Search types as <platform>/<type> (POST /v1/search takes the provider slug <id>/<platform>/<type>); omitted when the source has no search coverage."),
			"pricing":                obj{"type": "array", "items": ref("PricingRow")},
			"search_pricing":         obj{"type": "array", "items": ref("PricingRow"), "description": "Omitted when the source has no search coverage."},
		})},
	}
	s["SourceList"] = object("", []any{"data"}, obj{"data": obj{"type": "array", "items": ref("Source")}})
	totals := object("", []any{"requests", "records", "credits"}, obj{
		"requests":       obj{"type": "integer", "minimum": 0},
		"records":        obj{"type": "integer", "minimum": 0},
		"credits":        money(""),
		"cached_records": obj{"type": "integer", "minimum": 1, "description": "Of `records`, those served from the freshness cache; absent when none."},
		"cached_credits": money("Of `credits`, what the records served from the cache were billed (at their offers' cached prices)."),
	})
	s["UsageTotals"] = totals
	s["Usage"] = object("", []any{"period", "total_requests", "total_records", "total_credits", "by_provider", "by_platform"}, obj{
		"period":               obj{"type": "string", "pattern": `^[0-9]+d$`, "description": "Look-back, form `<days>d`."},
		"total_requests":       obj{"type": "integer", "minimum": 0},
		"total_records":        obj{"type": "integer", "minimum": 0},
		"total_credits":        money(""),
		"total_cached_records": obj{"type": "integer", "minimum": 1, "description": "Of `total_records`, those served from the freshness cache; absent when none."},
		"total_cached_credits": money("Of `total_credits`, what they were billed."),
		"by_provider":          obj{"type": "object", "additionalProperties": ref("UsageTotals"), "description": "Keyed by the offer that served each run."},
		"by_platform":          obj{"type": "object", "additionalProperties": ref("UsageTotals"), "propertyNames": ref("Platform")},
	})
	s["Balance"] = object("", []any{"balance", "currency"}, obj{
		"balance":  obj{"type": "number", "description": "Credits left (1 credit = 1 USD)."},
		"currency": obj{"const": "USD"},
	})
}
