package runs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStatusSetOnlyByLifecycle: no code but lifecycle.go sets a run's
// status (an assignment or a composite literal's Status: naming a run
// status, by constant, conversion or literal) or names a run event.
// Every transition asks a Life. Test files and storetest (its fixtures
// are stored runs, not transitions) are not scanned.
func TestStatusSetOnlyByLifecycle(t *testing.T) {
	root := filepath.Join("..") // caddymodule/
	statuses := map[string]bool{}
	for _, s := range []Status{StatusRunning, StatusCompleted, StatusFailed, StatusCancelled} {
		statuses[strconv.Quote(string(s))] = true
	}
	events := map[string]bool{}
	for s := range numStates {
		if e := s.Event(); e != "" {
			events[strconv.Quote(e)] = true
		}
	}
	// isStatus reports whether e names a run status without a Life.
	isStatus := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BasicLit:
				found = found || statuses[x.Value]
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "runs" && strings.HasPrefix(x.Sel.Name, "Status") {
					found = true
				}
			case *ast.Ident:
				found = found || (strings.HasPrefix(x.Name, "Status") && x.Obj == nil && statuses[strconv.Quote(strings.ToLower(strings.TrimPrefix(x.Name, "Status")))])
			}
			return !found
		})
		return found
	}
	isStatusField := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			return x.Sel.Name == "Status"
		case *ast.Ident:
			return x.Name == "Status"
		}
		return false
	}
	scanned := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "storetest" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == filepath.Join(root, "runs", "lifecycle.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		scanned++
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.AssignStmt:
				for i, l := range x.Lhs {
					if isStatusField(l) && i < len(x.Rhs) && isStatus(x.Rhs[i]) {
						t.Errorf("%s: a run's status set outside the lifecycle", fset.Position(x.Pos()))
					}
				}
			case *ast.KeyValueExpr:
				if isStatusField(x.Key) && isStatus(x.Value) {
					t.Errorf("%s: a run's status set outside the lifecycle", fset.Position(x.Pos()))
				}
			case *ast.BasicLit:
				if events[x.Value] && !strings.Contains(path, filepath.Join("registry", "openapi")) {
					t.Errorf("%s: a run event named outside the lifecycle", fset.Position(x.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files under %s: not the module", scanned, root)
	}
}
