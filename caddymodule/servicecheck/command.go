package servicecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"socialrouter/caddymodule/registry"
)

// TryCommand is `caddy sdr try`: one offer's normalizer over a payload
// file, offline, printing every record and every violation.
func TryCommand(load func(dir string) (*registry.Registry, error)) *cobra.Command {
	c := &cobra.Command{
		Use:   "try <platform>/<service> --payload FILE [--offer ID] [--input URL] [--services DIR]",
		Short: "Runs an offer's normalizer over an upstream payload offline and prints the records and violations",
		Long: `Runs the normalize program of one offer of a service (the first live offer
unless --offer names another) over an upstream payload (a JSON array of
items, or one item), as the gateway does, and checks every record against
the service's record schema, then runs the robustness mutations (each
field of each item replaced by a value of another JSON type). No gateway,
simulator or key is needed. It prints the same verdicts as sdr check, each
led by the file:line:column to fix, and exits 1 on exactly the problems
sdr check refuses (notes, such as an error row, do not fail).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir, _ := c.Flags().GetString("services")
			reg, err := load(dir)
			if err != nil {
				return err
			}
			offerID, _ := c.Flags().GetString("offer")
			payload, _ := c.Flags().GetString("payload")
			input, _ := c.Flags().GetString("input")
			return Try(c.OutOrStdout(), reg, args[0], offerID, payload, input)
		},
	}
	c.Flags().String("offer", "", "offer id, e.g. source_a/actor_1 (default: the service's first live offer)")
	c.Flags().String("payload", "", "upstream payload file (JSON array of items or one item)")
	c.Flags().String("input", "", "the input the items answer, bound to $input (default: the service's first accepted example)")
	c.Flags().String("services", "./services", "services directory")
	_ = c.MarkFlagRequired("payload")
	return c
}

// Try is TryCommand's work, writing its report to w.
func Try(w io.Writer, reg *registry.Registry, key, offerID, payloadFile, input string) error {
	platform, name, _ := strings.Cut(key, "/")
	s, ok := reg.Service(platform, name)
	if !ok {
		return fmt.Errorf("no service %q declared (want <platform>/<service>)", key)
	}
	o, err := pickOffer(s, offerID)
	if err != nil {
		return err
	}
	if o.Normalize == nil {
		return fmt.Errorf("offer %s of %s declares no normalize program", o.ID, s.Key)
	}
	b, err := os.ReadFile(payloadFile)
	if err != nil {
		return fmt.Errorf("reading payload: %v", err)
	}
	items, err := Items(b)
	if err != nil {
		return fmt.Errorf("%s: %v", payloadFile, err)
	}
	if input == "" {
		input = Input(s)
	}
	engine := "the compiled fast path"
	if fast, why := o.Normalize.FastPath(); !fast {
		engine = "gojq (" + why + ")"
	}
	fmt.Fprintf(w, "%s, offer %s on %s, $input %q, %d items\n", s.Key, o.ID, engine, input, len(items))
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	results, verdicts := judgeItems(context.Background(), o, items, input, now)
	for _, r := range results {
		switch {
		case r.Record != nil && r.Violation != nil:
			fmt.Fprintf(w, "item %d: record off its schema (never served nor billed)\n%s\n", r.Index, indent(r.Record))
		case r.Record != nil:
			fmt.Fprintf(w, "item %d: record\n%s\n", r.Index, indent(r.Record))
		}
	}
	robust := robustness(context.Background(), reg, o, items, input)
	problems := 0
	for _, p := range append(verdicts, robust...) {
		if p.info {
			fmt.Fprintf(w, "%s: note: %s\n", p.at, p.msg)
			continue
		}
		problems++
		fmt.Fprintf(w, "%s: %s\n", p.at, p.msg)
	}
	fmt.Fprintf(w, "%d items, %d records, %d problems (sdr check refuses exactly these)\n", len(items), countRecords(results), problems)
	if problems > 0 {
		return fmt.Errorf("%d problem(s): the gateway would refuse this example on sdr check and on a reload", problems)
	}
	return nil
}

// countRecords counts the records served (on their schema).
func countRecords(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Record != nil && r.Violation == nil {
			n++
		}
	}
	return n
}

func pickOffer(s *registry.Service, id string) (*registry.Offer, error) {
	if id != "" {
		if o, ok := s.Offer(id); ok {
			return o, nil
		}
	} else if live := s.LiveOffers(); len(live) > 0 {
		return live[0], nil
	}
	ids := make([]string, len(s.Offers))
	for i, o := range s.Offers {
		ids[i] = o.ID
	}
	if id == "" {
		return nil, fmt.Errorf("%s has no live offer; name one with --offer (declared: %s)", s.Key, strings.Join(ids, ", "))
	}
	return nil, fmt.Errorf("%s has no offer %q (declared: %s)", s.Key, id, strings.Join(ids, ", "))
}

func orRecord(field string) string {
	if field == "" {
		return "(the record)"
	}
	return field
}

func indent(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "  ", "  ") != nil {
		return "  " + string(b)
	}
	return "  " + out.String()
}

// CheckDir runs CheckExamples over the examples of the services directory
// dir, printing each problem to w; the error counts them.
func CheckDir(w io.Writer, reg *registry.Registry, dir string) error {
	for _, s := range SlowOffers(reg) {
		fmt.Fprintf(w, "note: %s\n", s)
	}
	all := check(context.Background(), reg, os.DirFS(dir), true)
	for _, p := range all {
		p.File = filepath.Join(dir, p.File)
		fmt.Fprintln(w, p)
	}
	probs := problemsOnly(all)
	if len(probs) > 0 {
		return fmt.Errorf("%d problem(s) in the examples of %s", len(probs), dir)
	}
	return nil
}
