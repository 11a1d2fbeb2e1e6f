package testmode_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"socialrouter/caddymodule/testmode"
)

var update = flag.Bool("update", false, "rewrite the generated tables of docs/testmode.md")

const docPage = "../../docs/testmode.md"

// TestDocsTables holds docs/testmode.md's tables to the code: the magic
// inputs and a magic input per declared service. -update rewrites them.
func TestDocsTables(t *testing.T) {
	reg, _ := testRouter(t)
	b, err := os.ReadFile(docPage)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, sec := range []struct{ name, table string }{
		{"magic", testmode.MagicTable()},
		{"inputs", testmode.InputTable(reg)},
	} {
		start, end := "<!-- "+sec.name+":start -->\n", "<!-- "+sec.name+":end -->"
		i, j := strings.Index(page, start), strings.Index(page, end)
		if i < 0 || j < i {
			t.Fatalf("%s has no %s…%s section", docPage, start, end)
		}
		got := page[i+len(start) : j]
		if got == sec.table {
			continue
		}
		if !*update {
			t.Errorf("the %s table of %s differs from the code; regenerate with go test ./caddymodule/testmode -run TestDocsTables -update\n got:\n%s\nwant:\n%s", sec.name, docPage, got, sec.table)
			continue
		}
		page = page[:i+len(start)] + sec.table + page[j:]
	}
	if *update {
		if err := os.WriteFile(docPage, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
