// Package errkind names the kinds of failure the domain packages (router,
// billing, …) report. A kind says what went wrong, never how a surface
// answers it: the HTTP status, the error code and the error type of each
// kind are decided once, at the edge, by the table of package api
// (api/errwire), which the REST API, MCP and the admin API render from.
package errkind

// Kind is what kind of failure ended a call.
type Kind uint8

// The kinds, one per error code family domain code produces.
const (
	// Internal is a failure that is nobody's fault but the gateway's.
	Internal Kind = iota
	// ServiceNotAvailable is a service with no live offer to call.
	ServiceNotAvailable
	// ProviderError is a call every offer of which failed.
	ProviderError
	// UpstreamRateLimited is a call every offer of which was rate-limited
	// upstream.
	UpstreamRateLimited
	// UpstreamRejectedInput is an input the upstream itself reported
	// invalid: no other offer is tried.
	UpstreamRejectedInput
	// RequestTimeout is a call whose last attempt (or the call's own
	// deadline) ran out of time.
	RequestTimeout
	// RequestSoftTimeout is a call whose last upstream stalled, with no
	// activity within the soft limit.
	RequestSoftTimeout
	// ClientClosed is a call whose caller went away while it ran.
	ClientClosed
	// StoreUnavailable is an account store that cannot be reached or
	// cannot write: nothing was charged.
	StoreUnavailable
	// InsufficientCredits is a call whose balance pays for not one record
	// of any offer.
	InsufficientCredits
	// CreditLimitExceeded is a call whose key's credit limit has no room
	// for one record in its period.
	CreditLimitExceeded

	// count is the number of kinds, for tables that must cover them all.
	count
)

// All returns every kind, for tables and their tests.
func All() []Kind {
	out := make([]Kind, 0, count)
	for k := range count {
		out = append(out, k)
	}
	return out
}

// String is the kind's Go name, for logs.
func (k Kind) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return "Kind(?)"
}

var names = [count]string{
	Internal:              "Internal",
	ServiceNotAvailable:   "ServiceNotAvailable",
	ProviderError:         "ProviderError",
	UpstreamRateLimited:   "UpstreamRateLimited",
	UpstreamRejectedInput: "UpstreamRejectedInput",
	RequestTimeout:        "RequestTimeout",
	RequestSoftTimeout:    "RequestSoftTimeout",
	ClientClosed:          "ClientClosed",
	StoreUnavailable:      "StoreUnavailable",
	InsufficientCredits:   "InsufficientCredits",
	CreditLimitExceeded:   "CreditLimitExceeded",
}
