package errwire

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"socialrouter/caddymodule/errkind"
)

// TestEveryKindIsDocumented: every kind has its own row in the table, and
// its status, code and type are a row of docs/errors.md, the page that
// lists every error the API answers, so the two cannot drift apart.
func TestEveryKindIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedErrors(string(doc))
	if len(documented) < 20 {
		t.Fatalf("read only %d codes from docs/errors.md: its table changed shape", len(documented))
	}
	codes := map[string]errkind.Kind{}
	for _, k := range errkind.All() {
		t.Run(k.String(), func(t *testing.T) {
			if int(k) >= len(table) || table[k].Code == "" {
				t.Fatalf("kind %v has no row in the table", k)
			}
			w := Of(k)
			if other, dup := codes[w.Code]; dup {
				t.Errorf("kinds %v and %v share code %s", other, k, w.Code)
			}
			codes[w.Code] = k
			got, ok := documented[w.Code]
			if !ok {
				t.Fatalf("code %s of kind %v is not in docs/errors.md", w.Code, k)
			}
			if got != (Wire{w.Status, w.Code, w.Type}) {
				t.Errorf("kind %v answers %d %s %s; docs/errors.md says %d %s %s", k, w.Status, w.Code, w.Type, got.Status, got.Code, got.Type)
			}
		})
	}
}

// row is a line of the errors table: | status | `code`, `code` | type | when |
var row = regexp.MustCompile("^\\| (\\d{3}) \\| ([^|]+) \\| ([a-z_]+) \\|")

// documentedErrors reads the errors table of docs/errors.md by code.
func documentedErrors(doc string) map[string]Wire {
	out := map[string]Wire{}
	for _, line := range strings.Split(doc, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		status, _ := strconv.Atoi(m[1])
		for _, c := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[2], -1) {
			out[c[1]] = Wire{status, c[1], m[3]}
		}
	}
	return out
}
