package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

// servicesCommand is `caddy sdr services reload`: POST
// /sdr/registry/reload on the running gateway.
func servicesCommand() *cobra.Command {
	services := &cobra.Command{Use: "services", Short: "Swaps the running gateway's services"}
	services.AddCommand(&cobra.Command{
		Use:   "reload",
		Short: "Recompiles the services directory and swaps it in without a config reload",
		Long: `Recompiles the running gateway's services directory and swaps the
registry in place: no listener, connection or call in flight is touched,
MCP clients are told the tool list changed. A directory that does not
compile is refused (its file:line:column first, on stderr) and the running
services keep serving.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			addr, err := adminAddress(c)
			if err != nil {
				return err
			}
			resp, err := caddycmd.AdminAPIRequest(addr, http.MethodPost, "/sdr/registry/reload", nil, nil)
			if err != nil {
				if msg, ok := adminErrorMessage(err); ok {
					fmt.Fprintln(c.ErrOrStderr(), msg)
					return fmt.Errorf("services reload refused; the running services keep serving")
				}
				return err
			}
			defer resp.Body.Close()
			var res SwapResult
			if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
				return fmt.Errorf("reading admin response: %v", err)
			}
			fmt.Fprintf(c.OutOrStdout(), "swapped: %d services (added %v, removed %v), digest %s, %d ms\n",
				res.Services, res.Added, res.Removed, res.Digest, res.TookMS)
			return nil
		},
	})
	return services
}

// adminErrorMessage is the message of a 400 the admin endpoint answered
// (`{"error": "…"}`), as AdminAPIRequest reports it.
func adminErrorMessage(err error) (string, bool) {
	_, body, ok := strings.Cut(err.Error(), "HTTP 400: ")
	if !ok {
		return "", false
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
		return "", false
	}
	return e.Error, true
}
