package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"socialrouter/caddymodule/servicecheck"
)

// checkServicesAtAdapt refuses, while the Caddyfile is adapted, the
// services Provision would refuse: `caddy reload --config Caddyfile`,
// `caddy run` and `caddy adapt` then print the operator's file:line:column
// right behind the adapter's two short prefixes, and the broken config
// never reaches the running instance, whose admin endpoint would wrap
// the same message in some 330 characters of module path. A services
// directory this process cannot see (a config adapted on another
// machine) is left to Provision, which checks it again in every case.
func checkServicesAtAdapt(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := servicecheck.Load(context.Background(), dir); err != nil {
		return fmt.Errorf("%w (loading services from %s)", err, dir)
	}
	return nil
}
