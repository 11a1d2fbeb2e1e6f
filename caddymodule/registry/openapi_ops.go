package registry

import "strings"

// operations adds to the finished document what operators and support use:
// the public health probes of a load balancer, and the X-Run-Id header
// that names the run (and its log line) on every run answer.
func operations(doc obj) {
	paths := doc["paths"].(obj)
	comps := doc["components"].(obj)
	comps["headers"].(obj)["X-Run-Id"] = obj{
		"description": "Id of the run this call stored (completed or failed), the `run_id` of its log line. " +
			"Absent when the call was refused before routing.",
		"schema": obj{"type": "string", "pattern": "^ext_"},
	}
	runID := func() obj { return obj{"X-Run-Id": headerRef("X-Run-Id")} }
	for p, item := range paths {
		if !strings.HasPrefix(p, "/v1/") {
			continue // /mcp answers JSON-RPC: a tool's run id is in its answer
		}
		if op, ok := item.(obj)["post"].(obj); ok {
			op["responses"].(obj)["200"].(obj)["headers"] = runID()
		}
	}
	for _, name := range []string{"BadRequest", "NotFound", "TooManyRequests", "BadGateway", "ServiceUnavailable", "GatewayTimeout"} {
		r := comps["responses"].(obj)[name].(obj)
		h, ok := r["headers"].(obj)
		if !ok {
			h = obj{}
			r["headers"] = h
		}
		h["X-Run-Id"] = headerRef("X-Run-Id")
	}
	comps["schemas"].(obj)["Health"] = object("", []any{"status"}, obj{
		"status": obj{"type": "string", "enum": []any{"live", "ready"}},
		"checks": obj{
			"type":                 "object",
			"description":          "Readiness checks: `registry` (declarations loaded) and `store` (answered a ping within 2 s), each `ok`.",
			"additionalProperties": obj{"type": "string"},
		},
	})
	probe := func(id, sum, desc string, notReady bool) obj {
		responses := obj{
			"200": obj{"description": "The node is " + id[len("health_"):] + ".", "content": jsonContent(ref("Health"))},
			"429": respRef("TooManyRequests"),
		}
		if notReady {
			responses["503"] = obj{
				"description": "`not_ready` (type `internal`): the declarations are not loaded, the store did not " +
					"answer, or the store cannot write (its disk is full or failing, so calls would be refused); `checks` names " +
					"the failing check (`not_loaded`, `unavailable`, `disk_full`, `write_failed`).",
				"content": jsonContent(ref("Error")),
			}
		}
		return obj{"get": obj{
			"operationId": id, "summary": sum, "description": desc,
			"tags": []any{"health"}, "security": []any{}, "responses": responses,
		}}
	}
	paths["/v1/health/live"] = probe("health_live", "Liveness probe",
		"200 while the process serves HTTP. Public, no key.", false)
	paths["/v1/health/ready"] = probe("health_ready", "Readiness probe",
		"200 when the service declarations are loaded and the account store answers a ping within 2 s and can write; "+
			"503 `not_ready` otherwise, so a load balancer takes the node out. Public, no key.", true)
	doc["tags"] = append(doc["tags"].([]any), obj{"name": "health", "description": "Probes for load balancers."})
}
