package errwire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
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

// TestEveryAPICodeIsDocumented: the codes the api package answers on its
// own (newError with a literal status and code, beside the kinds above)
// are rows of docs/errors.md with the same status, so a new code cannot
// ship undocumented.
func TestEveryAPICodeIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedErrors(string(doc))
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "..", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 2 {
					return true
				}
				if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "newError" {
					return true
				}
				sel, ok1 := call.Args[0].(*ast.SelectorExpr)
				lit, ok2 := call.Args[1].(*ast.BasicLit)
				if !ok1 || !ok2 || lit.Kind != token.STRING {
					return true
				}
				code, _ := strconv.Unquote(lit.Value)
				status, known := httpStatus[sel.Sel.Name]
				if !known {
					t.Errorf("%s: newError with %s: add it to httpStatus", fset.Position(call.Pos()), sel.Sel.Name)
					return true
				}
				seen++
				got, ok := documented[code]
				switch {
				case !ok:
					t.Errorf("%s: code %s (%d) is not in docs/errors.md", name, code, status)
				case got.Status != status:
					t.Errorf("%s: code %s answers %d; docs/errors.md says %d", name, code, status, got.Status)
				}
				return true
			})
		}
	}
	if seen < 30 {
		t.Fatalf("found only %d newError calls in the api package: the scan lost them", seen)
	}
}

// httpStatus holds the net/http status constants the api package uses.
var httpStatus = map[string]int{
	"StatusBadRequest":            400,
	"StatusUnauthorized":          401,
	"StatusNotFound":              404,
	"StatusMethodNotAllowed":      405,
	"StatusConflict":              409,
	"StatusRequestEntityTooLarge": 413,
	"StatusUnprocessableEntity":   422,
	"StatusTooManyRequests":       429,
	"StatusServiceUnavailable":    503,
}
