package registry

import (
	"fmt"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
)

// duplicateServices finds a service key declared in more than one of the
// operator's files. CUE unifies the two declarations, so an identical copy
// (a file copied to add a service and left unchanged) would merge
// silently, and a different one fails with a conflict that does not say
// the service lives in two files: both are refused here, naming both.
func duplicateServices(inst *build.Instance) []string {
	type decl struct{ file, at string }
	first := map[string]decl{}
	var problems []string
	for _, f := range inst.Files {
		if strings.HasPrefix(f.Filename, "schemas/") {
			continue
		}
		seen := map[string]bool{} // one file may split a service over several fields
		for _, d := range f.Decls {
			top, ok := d.(*ast.Field)
			if !ok || labelName(top.Label) != "services" {
				continue
			}
			st, ok := top.Value.(*ast.StructLit)
			if !ok {
				continue
			}
			for _, e := range st.Elts {
				fd, ok := e.(*ast.Field)
				if !ok {
					continue
				}
				key := labelName(fd.Label)
				if key == "" || seen[key] {
					continue
				}
				seen[key] = true
				p := fd.Label.Pos()
				at := fmt.Sprintf("%s:%d:%d", p.Filename(), p.Line(), p.Column())
				if prev, dup := first[key]; dup && prev.file != f.Filename {
					problems = append(problems, fmt.Sprintf("%s: service %s is declared in two files: %s and %s (keep one)", at, key, prev.at, at))
					continue
				}
				first[key] = decl{f.Filename, at}
			}
		}
	}
	return problems
}

// labelName is a field label's name: an identifier or a string literal.
func labelName(l ast.Label) string {
	name, _, err := ast.LabelName(l)
	if err != nil {
		return ""
	}
	return name
}
