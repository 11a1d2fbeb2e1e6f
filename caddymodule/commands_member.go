package caddymodule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

// adminRequest sends one admin request and returns the answer's body
// (Caddy's client turns an error status into an error).
func adminRequest(c *cobra.Command, method, uri string, body []byte) ([]byte, error) {
	addr, err := adminAddress(c)
	if err != nil {
		return nil, err
	}
	resp, err := caddycmd.AdminAPIRequest(addr, method, uri, nil, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading admin response: %v", err)
	}
	return b, nil
}

// memberCommand is `caddy sdr member invite <account> <email>`: it asks
// the admin API for a one-time invitation and prints its link.
func memberCommand() *cobra.Command {
	member := &cobra.Command{Use: "member", Short: "Invites members to an account's dashboard"}
	invite := &cobra.Command{
		Use: "invite <account> <email>", Short: "Prints a one-time dashboard invitation link (valid 72 hours)", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			base, _ := c.Flags().GetString("dashboard")
			body, _ := json.Marshal(map[string]string{"email": args[1]})
			out, err := adminRequest(c, http.MethodPost, "/sdr/accounts/"+url.PathEscape(args[0])+"/members", body)
			if err != nil {
				return err
			}
			var res struct {
				Path      string `json:"path"`
				ExpiresAt string `json:"expires_at"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				return fmt.Errorf("reading the admin answer: %v", err)
			}
			fmt.Fprintf(c.OutOrStdout(), "%s%s\n(one use, expires %s)\n", strings.TrimSuffix(base, "/")+"/", res.Path, res.ExpiresAt)
			return nil
		},
	}
	invite.Flags().String("dashboard", "http://localhost:8080/dashboard/", "The dashboard's public URL, to print the link")
	member.AddCommand(invite)
	return member
}
