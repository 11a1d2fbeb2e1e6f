// Command caddy is Caddy with the standard modules and Social Data Router,
// exactly the main.go that `xcaddy build --with socialrouter=.` generates.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	// plug in Caddy modules here
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "socialrouter/caddymodule"
	_ "socialrouter/caddymodule/ratelimit"
)

func main() {
	caddycmd.Main()
}
