package router

// What the freshness cache (caddymodule/cache, used by the API around
// Run) needs of the router: the limit applied exactly as a call's, over
// records merged from cache and from live work.

// ApplyLimit is the router's cut of per-input records by scope (see
// applyLimit), for callers that merge records around Run.
func ApplyLimit[T any](perInput [][]T, limit, skip int, scope string) (records []T, total int, more bool) {
	return applyLimit(perInput, limit, skip, scope)
}

// Scope is the limit scope in force for the request.
func (req *Request) Scope() string { return req.scope() }
