package caddymodule

import (
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

// cacheCommand is `caddy sdr cache stats|purge [service]`: the freshness
// cache's admin routes from a shell (docs/cache.md).
func cacheCommand() *cobra.Command {
	c := &cobra.Command{Use: "cache", Short: "Shows and purges the freshness cache of records"}
	c.AddCommand(&cobra.Command{
		Use: "stats", Short: "Prints the cache's entries and bytes by service, hits, misses and joins", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return adminCall(c, http.MethodGet, "/sdr/cache/stats", nil)
		},
	}, &cobra.Command{
		Use: "purge [<platform>/<service>]", Short: "Deletes the cached records of one service, or of all", Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path := "/sdr/cache/purge"
			if len(args) == 1 {
				path += "?service=" + url.QueryEscape(args[0])
			}
			return adminCall(c, http.MethodPost, path, nil)
		},
	})
	return c
}
