package caddymodule

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// ledgerCommand is `caddy sdr account ledger <id>`: the account's ledger.
func ledgerCommand() *cobra.Command {
	c := &cobra.Command{
		Use: "ledger <id>", Short: "Lists every movement of an account's credits, newest first", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			limit, _ := c.Flags().GetInt("limit")
			return adminCall(c, http.MethodGet, "/sdr/accounts/"+url.PathEscape(args[0])+"/transactions?limit="+strconv.Itoa(limit), nil)
		},
	}
	c.Flags().Int("limit", 100, "Rows (1 to 1000)")
	return c
}

// paymentsCommand is `caddy sdr payments orphans`.
func paymentsCommand() *cobra.Command {
	p := &cobra.Command{Use: "payments", Short: "Payments that need the operator"}
	p.AddCommand(&cobra.Command{
		Use: "orphans", Short: "Lists payments that reached no account (unknown account, refund of an unknown payment)", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return adminCall(c, http.MethodGet, "/sdr/payments/orphans", nil)
		},
	})
	return p
}
