package api

import (
	"net/http"

	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/testmode"
)

// routerFor is the router of the calls of an account: the test-mode router
// for a test twin (whose clients reach no upstream), else Router. A test
// account never gets Router, whatever is configured.
func (a *API) routerFor(accountID string) *router.Router {
	if testmode.IsTest(accountID) {
		return a.TestRouter
	}
	return a.Router
}

// asyncRouterFor is routerFor for async runs.
func (a *API) asyncRouterFor(accountID string) *router.Router {
	if testmode.IsTest(accountID) {
		if a.TestAsyncRouter != nil {
			return a.TestAsyncRouter
		}
		return a.TestRouter
	}
	if a.AsyncRouter != nil {
		return a.AsyncRouter
	}
	return a.Router
}

// testModeOff refuses a test key where no test router is configured.
func testModeOff() *Error {
	return newError(http.StatusUnauthorized, "test_mode_off", typeAuthentication,
		"this gateway serves no test mode: use a live key")
}
