package errkind

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// domain are the packages that report kinds and never decide how a
// failure is answered (issue 25): no HTTP status and no API error code
// is set in them. Statuses they compare are upstream answers, allowed.
var domain = []string{"router", "billing", "sources", "store", "normalize", "async", "webhooks"}

// answers are the ways an answer's status or code is set: a status
// constant or literal assigned or put in a struct field, an error code
// string put in a Code field.
var answers = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bstatus\w*\s*(:|=|:=)\s*(http\.Status\w+|[1-5]\d\d)\b`),
	regexp.MustCompile(`\bCode\s*(:|=|:=)\s*"`),
	regexp.MustCompile(`=\s*[1-5]\d\d\s*,\s*"[a-z_]+"`),
}

// statusUse is any use of a net/http status constant.
var statusUse = regexp.MustCompile(`http\.Status[A-Z]\w*`)

// TestDomainPackagesSpeakKinds greps the non-test sources of the domain
// packages for statuses and codes set as answers.
func TestDomainPackagesSpeakKinds(t *testing.T) {
	for _, pkg := range domain {
		t.Run(pkg, func(t *testing.T) {
			root := filepath.Join("..", pkg)
			n := 0
			err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() && (d.Name() == "testdata" || d.Name() == "storetest") {
					return fs.SkipDir // test fixtures, not answers
				}
				if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
					return nil
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				n++
				for i, line := range strings.Split(string(b), "\n") {
					if bad := answerIn(line); bad != "" {
						t.Errorf("%s:%d sets an answer (%s); report an errkind.Kind instead: %s", path, i+1, bad, strings.TrimSpace(line))
					}
				}
				return nil
			})
			if err != nil || n == 0 {
				t.Fatalf("read %d files of %s: %v", n, root, err)
			}
		})
	}
}

// answerIn is what on line sets a status or code, "" if nothing: a
// status constant is allowed only where it is compared with (an upstream
// answer's status).
func answerIn(line string) string {
	code, _, _ := strings.Cut(line, "//")
	for _, re := range answers {
		if m := re.FindString(code); m != "" {
			return m
		}
	}
	for _, loc := range statusUse.FindAllStringIndex(code, -1) {
		before := strings.TrimSpace(code[:loc[0]])
		if strings.HasSuffix(before, "==") || strings.HasSuffix(before, "!=") || strings.HasPrefix(strings.TrimSpace(code), "case ") {
			continue
		}
		return code[loc[0]:loc[1]]
	}
	return ""
}
