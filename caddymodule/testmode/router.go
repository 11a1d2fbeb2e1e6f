package testmode

import (
	"math"

	"socialrouter/caddymodule/router"
)

// RouterConfig is cfg for a test-mode router: its breakers never open (a
// magic failure says nothing of an upstream's health, and must not change
// which offer the next test call gets) and no observer counts its attempts
// as upstream ones.
func RouterConfig(cfg router.Config) router.Config {
	cfg.BreakerFailures = math.MaxInt32
	cfg.Observer = nil
	return cfg
}
