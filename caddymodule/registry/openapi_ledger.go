package registry

// ledger documents GET /v1/account/transactions and its schemas: every
// movement of the account's credits (package payments, store.Ledger).
func (b *openapiBuilder) ledger(paths obj) {
	b.schemas["Transaction"] = object("One movement of credits.", []any{"id", "kind", "amount", "created_at"}, obj{
		"id": str("`txn_…` for a stored movement; `day_YYYY-MM-DD` for a day's run charges."),
		"kind": obj{"type": "string", "enum": []any{"opening", "top_up", "auto_recharge", "refund", "adjustment", "run_charges"},
			"description": "`run_charges` rows aggregate the charges of a UTC day's runs."},
		"amount":      obj{"type": "number", "description": "Credits moved: above 0 a credit, below 0 a debit."},
		"balance":     obj{"type": "number", "description": "The balance right after the movement (absent on `run_charges` rows)."},
		"reason":      str("Why, for an operator's adjustment or a payment."),
		"reference":   str("The payment provider's object (payment intent, checkout session)."),
		"receipt_url": obj{"type": "string", "format": "uri", "description": "The payment's receipt."},
		"created_at":  obj{"type": "string", "format": "date-time", "description": "When it happened; the day's start for `run_charges`."},
	})
	b.schemas["TransactionPage"] = object("", []any{"data", "has_more"}, obj{
		"data":        obj{"type": "array", "items": ref("Transaction"), "description": "Newest first."},
		"has_more":    obj{"type": "boolean"},
		"next_cursor": str("Pass as `cursor` for the next page (absent on the last)."),
	})
	paths["/v1/account/transactions"] = obj{"get": obj{
		"operationId": "list_transactions", "summary": "The ledger", "tags": []any{"account"},
		"security": []any{obj{"bearer": []any{}}},
		"description": "Every movement of the authenticated account's credits, newest first: top-ups, automatic recharges, refunds, " +
			"operator adjustments and the charges of runs aggregated per UTC day. The balance is the sum of all of them.",
		"parameters": []any{
			obj{"name": "cursor", "in": "query", "required": false, "schema": obj{"type": "string"}, "description": "`next_cursor` of the previous page; anything else is 400 `invalid_cursor`."},
			obj{"name": "limit", "in": "query", "required": false, "schema": obj{"type": "integer", "minimum": 1, "maximum": 100, "default": 25}, "description": "Rows per page; another value is 400 `invalid_limit`."},
		},
		"responses": obj{
			"200": obj{"description": "A page of the ledger.", "content": jsonContent(ref("TransactionPage"))},
			"400": respRef("BadRequest"), "401": respRef("Unauthorized"), "429": respRef("TooManyRequests"), "503": respRef("ServiceUnavailable"),
		},
	}}
}
