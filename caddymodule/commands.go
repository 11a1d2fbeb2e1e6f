package caddymodule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/servicecheck"
	"socialrouter/caddymodule/transfer"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "sdr",
		Usage: "account|key|member|services|webhook|cache|check|try|openapi|export|import|backup|restore …",
		Short: "Manages Social Data Router accounts, keys and service declarations",
		Long: `
Account and key commands talk to a running gateway through Caddy's admin
endpoint (--address, default as Caddy's own commands: localhost:2019).
check, try and openapi work offline on a services directory.

  caddy sdr account create <id> [--balance <credits>]
  caddy sdr account show <id>
  caddy sdr account credit <id> <amount> [--reason <text>]   (to remove credits: -- -5)
  caddy sdr account ledger <id> [--limit n]  (every movement of its credits)
  caddy sdr account reset-test-balance <id>  (the test balance back to 100 credits)
  caddy sdr payments orphans                 (payments that reached no account)
  caddy sdr key create <account> [--test] [--name <name>] [--limit-period day --limit-credits 2]
  caddy sdr key limit <key_id> (--period <p> --credits <n> | --clear)
  caddy sdr key revoke <key_id>
  caddy sdr member invite <account> <email> [--dashboard <url>]
  caddy sdr services reload                  (swap the services in place)
  caddy sdr webhook create <account> <url> [--events run.completed,run.failed,...] [--mode test]
  caddy sdr webhook list <account> [--mode test] | deliveries <webhook_id> [--limit n]
  caddy sdr webhook test|rotate|delete <webhook_id> | resend <delivery_id>
  caddy sdr cache stats | purge [<platform>/<service>]
  caddy sdr check [dir]
  caddy sdr try <platform>/<service> --payload FILE [--offer ID] [--input URL] [--services DIR]
  caddy sdr openapi [dir]
  caddy sdr export --storage badger <dir>|postgres <url> [--output file]
  caddy sdr import --storage badger <dir>|postgres <url> [--input file]
  caddy sdr backup --output <file> [--since <version>]   (badger, online)
  caddy sdr restore --dir <new dir> --input <file> […]   (badger, offline)
`,
		CobraFunc: buildSDRCommand,
	})
}

func buildSDRCommand(cmd *cobra.Command) {
	cmd.PersistentFlags().String("address", "", "The address of Caddy's admin endpoint (default localhost:2019)")
	cmd.PersistentFlags().String("config", "", "Configuration file to read the admin address from")
	cmd.PersistentFlags().String("adapter", "", "Name of config adapter to apply")

	account := &cobra.Command{Use: "account", Short: "Creates, shows and credits accounts"}
	create := &cobra.Command{
		Use: "create <id>", Short: "Creates an account", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			bal, _ := c.Flags().GetString("balance")
			amount, err := creditsArg("--balance", bal)
			if err != nil {
				return err
			}
			b, _ := json.Marshal(map[string]any{"id": args[0], "balance": amount})
			return adminCall(c, http.MethodPost, "/sdr/accounts", b)
		},
	}
	create.Flags().String("balance", "0", "Starting balance in credits")
	credit := creditCommand()
	account.AddCommand(create,
		&cobra.Command{
			Use: "show <id>", Short: "Shows an account, its balance and keys", Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return adminCall(c, http.MethodGet, "/sdr/accounts/"+url.PathEscape(args[0]), nil)
			},
		},
		credit, ledgerCommand(),
		&cobra.Command{
			Use: "reset-test-balance <id>", Short: "Sets an account's test balance back to 100 credits (docs/testmode.md)", Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return adminCall(c, http.MethodPost, "/sdr/accounts/"+url.PathEscape(args[0])+"/test-balance/reset", nil)
			},
		})

	key := &cobra.Command{Use: "key", Short: "Creates, limits and revokes API keys"}
	kcreate := &cobra.Command{
		Use: "create <account>", Short: "Creates a key and prints its secret once", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name, _ := c.Flags().GetString("name")
			body := map[string]any{"name": name}
			if test, _ := c.Flags().GetBool("test"); test {
				body["mode"] = "test"
			}
			if lim, err := limitFlags(c, "limit-period", "limit-credits"); err != nil {
				return err
			} else if lim != nil {
				body["credit_limit"] = lim
			}
			b, _ := json.Marshal(body)
			return adminCall(c, http.MethodPost, "/sdr/accounts/"+url.PathEscape(args[0])+"/keys", b)
		},
	}
	kcreate.Flags().String("name", "", "A name for the key")
	kcreate.Flags().Bool("test", false, "A test key (<prefix>_test_…): answers from the example payloads, reaches no upstream, spends the test balance")
	kcreate.Flags().String("limit-period", "", "Credit limit period: hour, day, week or month")
	kcreate.Flags().String("limit-credits", "", "Credit limit per period")
	klimit := &cobra.Command{
		Use: "limit <key_id>", Short: "Sets or clears a key's credit limit", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			body := `{"credit_limit":null}`
			clear, _ := c.Flags().GetBool("clear")
			if clear && (c.Flags().Changed("period") || c.Flags().Changed("credits")) {
				return fmt.Errorf("give --clear alone, or --period and --credits")
			}
			if !clear {
				lim, err := limitFlags(c, "period", "credits")
				if err != nil {
					return err
				}
				if lim == nil {
					return fmt.Errorf("give --period and --credits, or --clear")
				}
				b, _ := json.Marshal(map[string]any{"credit_limit": lim})
				body = string(b)
			}
			return adminCall(c, http.MethodPatch, "/sdr/keys/"+url.PathEscape(args[0]), []byte(body))
		},
	}
	klimit.Flags().String("period", "", "hour, day, week or month")
	klimit.Flags().String("credits", "", "Credits per period")
	klimit.Flags().Bool("clear", false, "Remove the limit")
	key.AddCommand(kcreate, klimit, &cobra.Command{
		Use: "revoke <key_id>", Short: "Revokes a key at once", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return adminCall(c, http.MethodDelete, "/sdr/keys/"+url.PathEscape(args[0]), nil)
		},
	})

	check := &cobra.Command{
		Use: "check [dir]", Short: "Compiles a services directory offline; non-zero exit on any error", Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			reg, err := loadDir(args)
			if err != nil {
				return err
			}
			if err := servicecheck.CheckDir(os.Stderr, reg, append(args, "./services")[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "ok: %d services, %d sources, every live offer's example checked\n", len(reg.Services), len(reg.Sources))
			return nil
		},
	}
	openapi := &cobra.Command{
		Use: "openapi [dir]", Short: "Prints the OpenAPI document of a services directory", Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			reg, err := loadDir(args)
			if err != nil {
				return err
			}
			var out bytes.Buffer
			if err := json.Indent(&out, reg.OpenAPIJSON(), "", "  "); err != nil {
				return err
			}
			out.WriteByte('\n')
			_, err = c.OutOrStdout().Write(out.Bytes())
			return err
		},
	}
	try := servicecheck.TryCommand(func(dir string) (*registry.Registry, error) { return loadDir([]string{dir}) })
	cmd.AddCommand(account, key, check, openapi, try, memberCommand(), servicesCommand())
	cmd.AddCommand(backupCommands()...)
	cmd.AddCommand(webhookCommand(), paymentsCommand(), cacheCommand())
	transfer.AddCommands(cmd)
	refuseUnknownSubcommands(cmd)
}

// creditCommand is `caddy sdr account credit <id> <amount>`.
func creditCommand() *cobra.Command {
	credit := &cobra.Command{
		Use:   "credit <id> <amount>",
		Short: "Adds credits (a negative amount removes them: credit <id> -- -5)",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			amount, err := creditsArg("amount", args[1])
			if err != nil {
				return err
			}
			body := map[string]any{"amount": amount}
			if reason, _ := c.Flags().GetString("reason"); reason != "" {
				body["reason"] = reason
			}
			b, _ := json.Marshal(body)
			return adminCall(c, http.MethodPost, "/sdr/accounts/"+url.PathEscape(args[0])+"/credits", b)
		},
	}
	credit.Flags().String("reason", "", "Why, shown to the customer on the ledger row")
	credit.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return negativeAmountHint(err) })
	return credit
}

// negativeAmountHint explains the flag error of a negative amount: the
// flag parser reads "-5" as the shorthand flags 5, so the amount goes
// after "--".
func negativeAmountHint(err error) error {
	var d byte
	if _, e := fmt.Sscanf(err.Error(), "unknown shorthand flag: '%c'", &d); e == nil && (d >= '0' && d <= '9' || d == '.') {
		return fmt.Errorf("%v: to remove credits, put the amount after --: caddy sdr account credit <id> -- -5", err)
	}
	return err
}

// creditsArg reads a credit amount given on the command line ("5",
// "-0.25", "0.001725") exactly as the admin API will, so that a typo is
// refused here with its flag's name and nothing but a number reaches the
// request body.
func creditsArg(name, s string) (json.Number, error) {
	m, err := credits.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%s: %v", name, err)
	}
	return json.Number(m.String()), nil
}

// refuseUnknownSubcommands makes the command groups (sdr, account, key,
// member) fail on an unknown subcommand, as caddy itself does, instead of
// printing their help and exiting 0: a script's typo must not pass.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	if cmd.Runnable() || !cmd.HasSubCommands() {
		return
	}
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath())
		}
		return c.Help()
	}
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
}

func limitFlags(c *cobra.Command, pf, cf string) (map[string]any, error) {
	p, _ := c.Flags().GetString(pf)
	cr, _ := c.Flags().GetString(cf)
	if p == "" && cr == "" {
		return nil, nil
	}
	if p == "" || cr == "" {
		return nil, fmt.Errorf("give both --%s and --%s", pf, cf)
	}
	amount, err := creditsArg("--"+cf, cr)
	if err != nil {
		return nil, err
	}
	return map[string]any{"period": p, "credits": amount}, nil
}

func loadDir(args []string) (*registry.Registry, error) {
	dir := "./services"
	if len(args) == 1 {
		dir = args[0]
	}
	reg, err := registry.Load(dir)
	if err != nil {
		if re, ok := err.(*registry.Error); ok {
			for _, p := range re.Problems {
				fmt.Fprintln(os.Stderr, p)
			}
			return nil, fmt.Errorf("%d problem(s) in %s", len(re.Problems), dir)
		}
		return nil, err
	}
	return reg, nil
}

func adminAddress(c *cobra.Command) (string, error) {
	addr, _ := c.Flags().GetString("address")
	cfg, _ := c.Flags().GetString("config")
	adapter, _ := c.Flags().GetString("adapter")
	return caddycmd.DetermineAdminAPIAddress(addr, nil, cfg, adapter)
}

// adminCall sends one admin request and prints the answer (pretty JSON).
func adminCall(c *cobra.Command, method, uri string, body []byte) error {
	addr, err := adminAddress(c)
	if err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	resp, err := caddycmd.AdminAPIRequest(addr, method, uri, nil, rd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading admin response: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		fmt.Fprintln(c.OutOrStdout(), "ok")
		return nil
	}
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		out.Reset()
		out.Write(b)
	}
	out.WriteByte('\n')
	_, err = c.OutOrStdout().Write(out.Bytes())
	return err
}
