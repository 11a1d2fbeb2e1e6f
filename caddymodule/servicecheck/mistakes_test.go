package servicecheck_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"socialrouter/caddymodule/servicecheck"
)

// operatorMistakes are the slips an operator makes while adding a service
// by docs/add-a-service.md, each applied to the walkthrough's new service
// (testdata/newservice). Each must be refused before anything serves, by
// the loader that sdr check, sdr try, Provision and every reload run.
var operatorMistakes = []struct {
	name string
	file string // under the services copy
	old  string // replaced once; "" deletes the file
	new  string
	at   string // the problem must lead with this file (and a line)
}{
	// Declaration: names and shapes.
	{"platform typo", cueFile, `platform:    "micro_net"`, `platform:    "micronet"`, cueFile},
	{"service key disagrees with its fields", cueFile, `service:     "profile.info"`, `service:     "profile.infos"`, cueFile},
	{"service name without a dot", cueFile, `service:     "profile.info"`, `service:     "profile"`, cueFile},
	{"unknown input kind", cueFile, `input_kind:  "url"`, `input_kind:  "link"`, cueFile},
	{"empty description", cueFile, `description: "A public profile of the micro-blogging network."`, `description: ""`, cueFile},
	{"no accepted input", cueFile, "accepts: [{", "accepts: [], _unused: [{", cueFile},
	{"bad accept pattern", cueFile, `[A-Za-z0-9_]{1,15}/?"#`, `[A-Za-z0-9_{1,15}/?"#`, cueFile},
	{"accept example the pattern refuses", cueFile, `example: "https://x.com/example_user"`, `example: "https://x.com/example_user/status/1"`, cueFile},
	{"unknown host placeholder", cueFile, `#"https?://{micro_host}/`, `#"https?://{mikro_host}/`, cueFile},
	{"record definition misspelt", cueFile, `record: "#MicroProfile"`, `record: "#MicroProfil"`, cueFile},
	{"record name not a definition", cueFile, `record: "#MicroProfile"`, `record: "MicroProfile"`, cueFile},
	{"limit scope misspelt", cueFile, `record: "#MicroProfile"`, `record: "#MicroProfile"` + "\n\tlimit_scope: \"per-input\"", cueFile},
	{"option of unknown type", cueFile, `record: "#MicroProfile"`, `record: "#MicroProfile"` + "\n\toptions: [{name: \"lang\", type: \"text\", description: \"d\"}]", cueFile},
	// Offers.
	{"unknown source", cueFile, `offer:            "source_b/micro_net"`, `offer:            "source_c/micro_net"`, cueFile},
	{"offer id without a source", cueFile, `offer:            "source_b/micro_net"`, `offer:            "micro_net"`, cueFile},
	{"one offer declared twice", cueFile, `offer:            "source_a/actor_8"`, `offer:            "source_b/micro_net"`, cueFile},
	{"price as a string", cueFile, `price_per_record: 0.0015`, `price_per_record: "0.0015"`, cueFile},
	{"price zero", cueFile, `price_per_record: 0.0015`, `price_per_record: 0`, cueFile},
	{"negative price", cueFile, `price_per_record: 0.004`, `price_per_record: -0.004`, cueFile},
	{"max_inputs zero", cueFile, `max_inputs:       100`, `max_inputs:       0`, cueFile},
	{"no target", cueFile, `target:           "gd_micro_profile"`, `target:           ""`, cueFile},
	{"request that is not jq", cueFile, `request:          "{input: [.inputs[] | {url: .}]}"`, `request:          "{input: [.inputs[] | {url: .}]"`, cueFile},
	{"no normalizer", cueFile, "normalize: _jqPrelude + #\"\"\"\n\t\t\tif type != \"object\" or (.id == null", "_n: _jqPrelude + #\"\"\"\n\t\t\tif type != \"object\" or (.id == null", cueFile},
	// Normalizers.
	{"jq syntax error", cueFile, `name: (.name | str), profile_url: (.url | str),`, `name: (.name | str), profile_url: (.url | str,`, cueFile},
	{"unknown jq function", cueFile, `follower_count: (.followers | toint)`, `follower_count: (.followers | to_int)`, cueFile},
	{"unknown jq variable", cueFile, `source: "micro_net", extracted_at: $now,`, `source: "micro_net", extracted_at: $today,`, cueFile},
	{"undeclared record field", cueFile, `username: (.id | str), follower_count`, `handle: (.id | str), follower_count`, cueFile},
	{"wrong field type", cueFile, `follower_count: (.followers | toint)`, `follower_count: .followers`, cueFile},
	{"date not ISO 8601", cueFile, `joined_at: (.date_joined | iso8601)`, `joined_at: .date_joined`, cueFile},
	{"normalizer errors on every item", cueFile, `name: (.name | str), profile_url: (.url | str),`, `name: (.name | str), profile_url: (.url | str), x: (.id | error),`, cueFile},
	{"normalizer keeps nothing", cueFile, `if type != "object" or (.id == null and .url == null) then empty else`, `if true then empty else`, cueFile},
	{"error rows not guarded", cueFile, `if type != "object" or (.userName == null and .profileUrl == null) then empty else`, `if type != "object" then empty else`, cueFile},
	{"not robust to a null field", cueFile, `name: (.displayName | str)`, `name: (.displayName | ascii_downcase)`, cueFile},
	{"platform of the record wrong", cueFile, `source: "micro_net", extracted_at: $now,
				name: (.displayName`, `source: "micro-net", extracted_at: $now,
				name: (.displayName`, cueFile},
	// Examples.
	{"example file missing", exampleA, "", "", cueFile},
	{"example not JSON", exampleA, `[`, `[[`, cueFile},
	{"example empty", exampleB, "", "[]", cueFile},
}

const (
	cueFile  = "micro_net_profile.cue"
	exampleA = "examples/source_a/micro_net__profile.info.json"
	exampleB = "examples/source_b/micro_net__profile.info.json"
)

// TestOperatorMistakesAreRefused: every mistake of operatorMistakes is
// refused by servicecheck.Load, and the message's first line leads with
// the file at fault and a line number, so the operator knows where to look.
func TestOperatorMistakesAreRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the services once per mistake")
	}
	dir := withNewService(t)
	if _, err := servicecheck.Load(context.Background(), dir); err != nil {
		t.Fatalf("the new service without a mistake: %v", err)
	}
	caught := 0
	for _, m := range operatorMistakes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(dir, filepath.FromSlash(m.file))
			good, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(p, good, 0o644)
			switch {
			case m.old == "" && m.new == "":
				err = os.Remove(p)
			case m.old == "":
				err = os.WriteFile(p, []byte(m.new), 0o644)
			default:
				if !strings.Contains(string(good), m.old) {
					t.Fatalf("%s does not contain %q", m.file, m.old)
				}
				err = os.WriteFile(p, []byte(strings.Replace(string(good), m.old, m.new, 1)), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = servicecheck.Load(context.Background(), dir)
			if err == nil {
				t.Errorf("accepted")
				return
			}
			first, _, _ := strings.Cut(err.Error(), "\n")
			lead := `^` + regexp.QuoteMeta(filepath.Join(dir, filepath.FromSlash(m.at))) + `:\d+(:\d+)?: `
			if !regexp.MustCompile(lead).MatchString(first) {
				t.Errorf("refused, but the first line does not lead with %s:line:\n%s", m.at, first)
				return
			}
			caught++
		})
	}
	t.Logf("%d of %d mistakes refused with their position", caught, len(operatorMistakes))
}
