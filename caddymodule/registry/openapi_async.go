package registry

import (
	"fmt"
	"strings"

	"socialrouter/caddymodule/limits"
)

// asyncDoc adds to the finished document the asynchronous side of the
// run calls: the Prefer: respond-async and Idempotency-Key headers of the
// extract and search POSTs with their 202, 409 and 422 answers, the
// running and cancelled run statuses, and the records and cancel routes
// of a run.
func asyncDoc(doc obj) {
	paths := doc["paths"].(obj)
	comps := doc["components"].(obj)
	hdrs := comps["headers"].(obj)
	hdrs["Location"] = obj{"description": "Where to follow the async run: `/v1/extractions/{id}`.", "required": true,
		"schema": obj{"type": "string", "pattern": "^/v1/extractions/ext_"}}
	hdrs["Preference-Applied"] = obj{"description": "`respond-async` (RFC 7240): the call runs asynchronously.",
		"schema": obj{"type": "string", "const": "respond-async"}}
	hdrs["Idempotent-Replayed"] = obj{"description": "`true` on the answer of a call whose Idempotency-Key named an earlier call: " +
		"its run, answered again; nothing was routed or charged.", "schema": obj{"type": "string", "const": "true"}}
	hdrs["Link"] = obj{"description": "`<…>; rel=\"next\"`: the next page of records, absent on the last.", "schema": obj{"type": "string"}}

	resps := comps["responses"].(obj)
	conflict := obj{"description": "Conflict (type `validation`): `idempotency_key_in_use` (the first call with this " +
		"Idempotency-Key is still running; retry after it answered; carries `run_id`), `run_not_finished` (the run's " +
		"records are served once it completed), `run_finished` (only a running run can be cancelled).",
		"content": jsonContent(ref("Error")), "headers": obj{"Retry-After": headerRef("Retry-After")}}
	resps["Conflict"] = conflict
	resps["UnprocessableEntity"] = obj{"description": "`idempotency_key_reused` (type `validation`): the Idempotency-Key was " +
		"used with another request in the last 24 hours; carries `run_id` of the first.", "content": jsonContent(ref("Error"))}
	bad := resps["BadRequest"].(obj)
	bad["description"] = bad["description"].(string) +
		" `invalid_idempotency_key`: the Idempotency-Key header is not one string of 1 to 255 printable ASCII characters."

	schemas := comps["schemas"].(obj)
	for _, name := range []string{"Run", "SearchRun"} {
		s := schemas[name].(obj)
		props := s["properties"].(obj)
		props["status"] = obj{"type": "string", "enum": []any{"running", "completed", "failed", "cancelled"},
			"description": "`running` only for an async run (Prefer: respond-async) until it settles; `cancelled` for " +
				"an async run cancelled first (nothing charged)."}
		var req []any
		for _, r := range s["required"].([]any) {
			if r != "completed_at" {
				req = append(req, r)
			}
		}
		s["required"] = req
		ended := obj{"if": obj{"properties": obj{"status": obj{"enum": []any{"completed", "failed", "cancelled"}}}},
			"then": obj{"required": []any{"completed_at"}}}
		served := obj{"if": s["if"], "then": s["then"]}
		all := []any{ended, served}
		if name == "Run" {
			all = append(all, obj{"if": obj{"properties": obj{"status": obj{"const": "failed"}}}, "then": obj{"required": []any{"error"}}})
		}
		delete(s, "if")
		delete(s, "then")
		delete(s, "else")
		s["allOf"] = all
	}
	schemas["RecordsPage"] = object("A page of a run's records.", []any{"run_id", "data", "total", "next_cursor"}, obj{
		"run_id":      obj{"type": "string", "pattern": "^ext_"},
		"data":        obj{"type": "array", "items": obj{"type": "object"}, "description": "The records of this page, in the run's order."},
		"total":       obj{"type": "integer", "minimum": 0, "description": "Records of the run."},
		"next_cursor": obj{"type": []any{"string", "null"}, "description": "`cursor` of the next page; null on the last."},
	})

	prefer := obj{"name": "Prefer", "in": "header", "required": false, "schema": obj{"type": "string"},
		"description": fmt.Sprintf("`respond-async` (RFC 7240): answer `202` at once with the run (`status: running`) and run it "+
			"in the background; follow it at `GET /v1/extractions/{id}`. Validation, authentication and the hold of the run's "+
			"maximum charge happen first (same 400/402/429). `limit` then goes up to %d (%d synchronously); the run ends "+
			"at its deadline (1 h by default).", limits.AsyncLimitMax, limits.ExtractLimitMax)}
	idem := obj{"name": "Idempotency-Key", "in": "header", "required": false,
		"schema": obj{"type": "string", "minLength": 1, "maxLength": 257},
		"description": "A key of your choosing (IETF httpapi draft), e.g. `\"8e03978e-40d5-43e8-bc93-6894a57f9324\"`: for 24 h the " +
			"same key with the same request answers the same run (`Idempotent-Replayed: true`) with no second upstream call " +
			"or charge; with another request 422 `idempotency_key_reused`; while the first call runs 409 " +
			"`idempotency_key_in_use` (an async call gets the running run). Scoped to the account."}
	accepted := obj{"description": "Accepted (`Prefer: respond-async`): the run as it stands, `status: running`.",
		"headers": obj{"Location": headerRef("Location"), "Preference-Applied": headerRef("Preference-Applied"),
			"Idempotent-Replayed": headerRef("Idempotent-Replayed"), "X-Run-Id": headerRef("X-Run-Id")},
		"content": jsonContent(obj{"oneOf": []any{ref("Run"), ref("SearchRun")}})}
	for p, item := range paths {
		op, ok := item.(obj)["post"].(obj)
		if !ok || !strings.HasPrefix(p, "/v1/") {
			continue
		}
		params, _ := op["parameters"].([]any)
		op["parameters"] = append(params, prefer, idem)
		r := op["responses"].(obj)
		r["202"] = accepted
		r["409"] = respRef("Conflict")
		r["422"] = respRef("UnprocessableEntity")
		r["200"].(obj)["headers"].(obj)["Idempotent-Replayed"] = headerRef("Idempotent-Replayed")
		if body, ok := op["requestBody"].(obj)["content"].(obj)["application/json"].(obj)["schema"].(obj); ok {
			if lim, ok := body["properties"].(obj)["limit"].(obj); ok && lim["maximum"] == limits.ExtractLimitMax {
				lim["maximum"] = limits.AsyncLimitMax
				lim["description"] = fmt.Sprintf("%s At most %d; up to %d with `Prefer: respond-async` (above %d synchronously: 400 `invalid_limit`).",
					lim["description"], limits.ExtractLimitMax, limits.AsyncLimitMax, limits.ExtractLimitMax)
			}
		}
	}

	auth := []any{obj{"bearer": []any{}}}
	idParam := obj{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string", "pattern": "^ext_"}, "description": "Run id `ext_<id>`."}
	if g, ok := paths["/v1/extractions/{id}"].(obj)["get"].(obj); ok {
		g["description"] = g["description"].(string) + " An async run answers `running` with the attempts so far (`outcome` " +
			"`running` for the one under way, `failed_over` for one that ended without serving), then `completed` or `failed` " +
			"exactly as a synchronous run would have, or `cancelled`."
	}
	paths["/v1/extractions/{id}/records"] = obj{"get": obj{
		"operationId": "get_run_records", "summary": "Page a run's records", "tags": []any{"runs"}, "security": auth,
		"description": "The records of a settled run, a page at a time, so a 5,000-record run is never one large answer. " +
			"`Accept: application/x-ndjson` answers one record a line (the total in `X-Total-Count`, the next page in `Link`).",
		"parameters": []any{idParam,
			obj{"name": "cursor", "in": "query", "required": false, "schema": obj{"type": "string"}, "description": "`next_cursor` of the previous page."},
			obj{"name": "limit", "in": "query", "required": false, "schema": obj{"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}, "description": "Records per page."},
		},
		"responses": obj{
			"200": obj{"description": "A page of records.", "headers": obj{"Link": headerRef("Link")},
				"content": obj{"application/json": obj{"schema": ref("RecordsPage")},
					"application/x-ndjson": obj{"schema": obj{"type": "string", "description": "One record (JSON object) per line."}}}},
			"400": respRef("BadRequest"), "401": respRef("Unauthorized"), "404": respRef("NotFound"),
			"409": respRef("Conflict"), "429": respRef("TooManyRequests"), "503": respRef("ServiceUnavailable"),
		},
	}}
	paths["/v1/extractions/{id}/cancel"] = obj{"post": obj{
		"operationId": "cancel_run", "summary": "Cancel an async run", "tags": []any{"runs"}, "security": auth,
		"description": "Stops the upstream work of a running async run, releases its hold and settles it as `cancelled` " +
			"with no charge. Answers the cancelled run; `202` with the run as it stands if its worker has not settled it within 20 s. " +
			"A run already settled is 409 `run_finished`.",
		"parameters": []any{idParam},
		"responses": obj{
			"200": obj{"description": "The cancelled run.", "content": jsonContent(obj{"oneOf": []any{ref("Run"), ref("SearchRun")}})},
			"202": obj{"description": "Cancellation requested; the run as it stands.", "headers": obj{"Location": headerRef("Location")},
				"content": jsonContent(obj{"oneOf": []any{ref("Run"), ref("SearchRun")}})},
			"401": respRef("Unauthorized"), "404": respRef("NotFound"), "409": respRef("Conflict"),
			"429": respRef("TooManyRequests"), "503": respRef("ServiceUnavailable"),
		},
	}}
}
