// Package errwire is the one table from an error kind (package errkind)
// to how it is answered: HTTP status, error code and error type. Domain
// packages report kinds; the REST API (package api), the MCP tools and the
// admin API render them from this table, so a kind is answered alike on
// every surface. It belongs to package api, apart only so that the other
// surfaces can read the table without importing the whole API.
package errwire

import (
	"net/http"

	"socialrouter/caddymodule/errkind"
)

// Error types of the envelope (docs/errors.md).
const (
	TypeValidation     = "validation"
	TypeAuthentication = "authentication"
	TypeBilling        = "billing"
	TypeRateLimit      = "rate_limit"
	TypeNotFound       = "not_found"
	TypeTimeout        = "timeout"
	TypeProvider       = "provider"
	TypeInternal       = "internal"
	TypeCanceled       = "canceled"
)

// Wire is how one kind is answered.
type Wire struct {
	Status int
	Code   string
	Type   string
}

// table is indexed by kind; TestEveryKindIsDocumented checks that it
// covers every kind with a code docs/errors.md lists.
var table = [...]Wire{
	errkind.Internal:              {http.StatusInternalServerError, "internal_error", TypeInternal},
	errkind.ServiceNotAvailable:   {http.StatusNotFound, "service_not_available", TypeNotFound},
	errkind.ProviderError:         {http.StatusBadGateway, "provider_error", TypeProvider},
	errkind.UpstreamRateLimited:   {http.StatusTooManyRequests, "upstream_rate_limited", TypeRateLimit},
	errkind.UpstreamRejectedInput: {http.StatusBadRequest, "upstream_rejected_input", TypeValidation},
	errkind.RequestTimeout:        {http.StatusGatewayTimeout, "request_timeout", TypeTimeout},
	errkind.RequestSoftTimeout:    {http.StatusGatewayTimeout, "request_soft_timeout", TypeTimeout},
	errkind.ClientClosed:          {499, "client_closed_request", TypeCanceled}, // nginx's "client closed request"
	errkind.StoreUnavailable:      {http.StatusServiceUnavailable, "store_unavailable", TypeInternal},
	errkind.InsufficientCredits:   {http.StatusPaymentRequired, "insufficient_credits", TypeBilling},
	errkind.CreditLimitExceeded:   {http.StatusTooManyRequests, "credit_limit_exceeded", TypeRateLimit},
}

// Of is how kind k is answered; a kind missing from the table (a bug the
// table's test catches) is answered as Internal.
func Of(k errkind.Kind) Wire {
	if int(k) < len(table) && table[k].Code != "" {
		return table[k]
	}
	return table[errkind.Internal]
}
