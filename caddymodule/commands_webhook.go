package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"socialrouter/caddymodule/testmode"
	"socialrouter/caddymodule/webhooks"
)

// webhookCommand is `caddy sdr webhook …`: the webhook admin routes from
// a shell (docs/webhooks.md).
func webhookCommand() *cobra.Command {
	webhook := &cobra.Command{Use: "webhook", Short: "Registers, tests, rotates and deletes webhook endpoints"}
	create := &cobra.Command{
		Use: "create <account> <url>", Short: "Registers an endpoint and prints its signing secret once", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			events, _ := c.Flags().GetString("events")
			mode, err := modeFlag(c)
			if err != nil {
				return err
			}
			b, _ := json.Marshal(map[string]any{"url": args[1], "events": strings.Split(events, ","), "mode": mode})
			return adminCall(c, http.MethodPost, "/sdr/accounts/"+url.PathEscape(args[0])+"/webhooks", b)
		},
	}
	create.Flags().String("events", strings.Join(webhooks.Events, ","), "Comma-separated events to send")
	list := &cobra.Command{
		Use: "list <account>", Short: "Lists an account's endpoints of one mode", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			mode, err := modeFlag(c)
			if err != nil {
				return err
			}
			return adminCall(c, http.MethodGet, "/sdr/accounts/"+url.PathEscape(args[0])+"/webhooks?mode="+url.QueryEscape(mode), nil)
		},
	}
	for _, cmd := range []*cobra.Command{create, list} {
		cmd.Flags().String("mode", "live", "live, or test for the endpoints of test runs (docs/testmode.md)")
	}
	deliveries := &cobra.Command{
		Use: "deliveries <webhook_id>", Short: "Prints an endpoint's delivery log, newest first", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			limit, _ := c.Flags().GetInt("limit")
			return adminCall(c, http.MethodGet, "/sdr/webhooks/"+url.PathEscape(args[0])+"/deliveries?limit="+strconv.Itoa(limit), nil)
		},
	}
	deliveries.Flags().Int("limit", 50, "How many deliveries (1-500)")
	// call is a command of one id argument and no body.
	call := func(use, short, method, prefix, suffix string) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return adminCall(c, method, prefix+url.PathEscape(args[0])+suffix, nil)
			},
		}
	}
	webhook.AddCommand(create, list, deliveries,
		call("delete <webhook_id>", "Deletes an endpoint and its delivery log", http.MethodDelete, "/sdr/webhooks/", ""),
		call("rotate <webhook_id>", "Gives an endpoint a new secret (the old one signs too for 24 hours)", http.MethodPost, "/sdr/webhooks/", "/rotate"),
		call("test <webhook_id>", "Sends a webhook.test event to an endpoint", http.MethodPost, "/sdr/webhooks/", "/test"),
		call("resend <delivery_id>", "Makes one more attempt of a delivery now", http.MethodPost, "/sdr/deliveries/", "/resend"),
	)
	return webhook
}

// modeFlag is the --mode of a webhook command, refused before anything is
// sent unless it is live or test.
func modeFlag(c *cobra.Command) (string, error) {
	mode, _ := c.Flags().GetString("mode")
	if mode == "" || !testmode.ValidMode(mode) {
		return "", fmt.Errorf("--mode: %q is neither live nor test", mode)
	}
	return mode, nil
}
