package caddymodule

import (
	"cmp"
	"os"
	"time"

	"socialrouter/caddymodule/api"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/testmode"
)

// compileTestMode builds c's test-mode routers: router.New over the
// testmode clients of c's registry, which answer from the services
// directory's examples and hold no network client, so a test key's call
// cannot reach an upstream. Their breakers are their own and never open
// (testmode.RouterConfig): a magic failure says nothing of an upstream.
func (a *App) compileTestMode(c *compiled) error {
	clients, err := testmode.Clients(c.reg, os.DirFS(a.Services))
	if err != nil {
		return err
	}
	logger := a.logger.Named("router.test")
	c.testRouter = router.New(testmode.RouterConfig(router.Config{
		AttemptTimeout: time.Duration(a.AttemptTimeout),
		SoftTimeout:    time.Duration(a.SoftTimeout),
	}), clients, nil, logger)
	c.testAsyncRouter = router.New(testmode.RouterConfig(router.Config{
		AttemptTimeout: cmp.Or(time.Duration(a.AsyncDeadline), api.DefaultAsyncDeadline),
		SoftTimeout:    time.Duration(a.SoftTimeout),
	}), clients, nil, logger)
	return nil
}
