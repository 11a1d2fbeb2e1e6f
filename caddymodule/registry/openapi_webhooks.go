package registry

// webhooks is the document's OpenAPI 3.1 webhooks object: the requests
// the gateway sends to an account's registered endpoints (package
// webhooks), one per event type, so a receiver can be generated from the
// same document as a client.
func webhooks() obj {
	header := func(name, desc string) obj {
		return obj{"name": name, "in": "header", "required": true, "description": desc, "schema": obj{"type": "string"}}
	}
	params := []any{
		header("webhook-id", "The delivery's id (`msg_…`): the same on every retry. Use it to process each delivery once."),
		header("webhook-timestamp", "Unix seconds of this attempt; refuse one far from your clock (the reference libraries allow 5 minutes)."),
		header("webhook-signature", "Space-separated `v1,<base64 HMAC-SHA256>` signatures of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the base64-decoded part of the endpoint's `whsec_…` secret: two for 24 hours after a rotation, one per secret. Accept the delivery if one matches."),
	}
	responses := obj{
		"2XX": obj{"description": "Delivered. Any other answer, a timeout (15 s) or a refused connection is retried: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (±10%), about 27.5 hours in all, then the delivery fails. Redirects are not followed."},
		"410": obj{"description": "Gone: the endpoint is disabled and sent nothing more."},
	}
	event := func(typ, summary string, data obj) obj {
		return obj{"post": obj{
			"operationId": "webhook_" + typ,
			"summary":     summary,
			"description": "Sent to every endpoint of the account subscribed to `" + typ + "`, signed as Standard Webhooks specifies.",
			"tags":        []any{"webhooks"},
			"security":    []any{},
			"parameters":  params,
			"requestBody": obj{"required": true, "content": jsonContent(object("The Standard Webhooks envelope.", []any{"type", "timestamp", "data"}, obj{
				"type":      obj{"const": typ},
				"timestamp": obj{"type": "string", "format": "date-time", "description": "When the event happened (the same on every retry)."},
				"data":      data,
			}))},
			"responses": responses,
		}}
	}
	thin := obj{
		"type":        "object",
		"description": "A run of more than 256 KiB: every field but `data` (its records), which the receiver pages from the API.",
		"required":    []any{"id", "status", "data_omitted"},
		"properties":  obj{"id": str("The run id."), "status": str("The run's status."), "data_omitted": obj{"const": true}},
	}
	run := obj{"anyOf": []any{ref("Run"), ref("SearchRun"), thin}, "description": "The run, as `GET /v1/extractions/{id}` answers it; without its records when it is over 256 KiB."}
	return obj{
		"run.completed": event("run.completed", "An asynchronous run completed", run),
		"run.failed":    event("run.failed", "An asynchronous run failed", run),
		"run.cancelled": event("run.cancelled", "An asynchronous run was cancelled", run),
		"balance.low": event("balance.low", "The balance fell under the threshold the account set",
			object("", []any{"id", "account", "balance", "threshold"}, obj{"id": str("The event's id."), "account": str("The account."),
				"balance":   obj{"type": "number", "description": "The balance after the settle that crossed the threshold."},
				"threshold": obj{"type": "number", "description": "The account's low-balance threshold."}})),
		"billing.recharge_failed": event("billing.recharge_failed", "An automatic recharge failed or needs the customer",
			object("", []any{"id", "account", "reason", "failures_in_a_row", "auto_recharge"}, obj{"id": str("The recharge's id (`rch_…`)."),
				"account": str("The account."), "reason": str("Why, for the customer."),
				"failures_in_a_row": obj{"type": "integer", "description": "Failed recharges in a row; at 3 automatic recharge turns off."},
				"auto_recharge":     obj{"type": "boolean", "description": "Whether automatic recharge is still on."}})),
		"webhook.test": event("webhook.test", "A test event, sent on demand (dashboard or admin API) whatever the subscription",
			object("", []any{"endpoint_id", "message"}, obj{"endpoint_id": str("The endpoint's id (`wh_…`)."), "message": str("")})),
	}
}
