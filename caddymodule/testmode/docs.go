package testmode

import (
	"fmt"
	"strings"

	"socialrouter/caddymodule/api/errwire"
	"socialrouter/caddymodule/registry"
)

// MagicTable is the Markdown table of the magic inputs, as
// docs/testmode.md shows it (a test keeps the page equal to it): each
// word, the answer of a synchronous call, and what happens.
func MagicTable() string {
	var b strings.Builder
	b.WriteString("| input | answer | what happens |\n|---|---|---|\n")
	for _, m := range Magics {
		answer := "200, `completed`"
		if m.Fails {
			w := errwire.Of(m.Kind)
			answer = fmt.Sprintf("%d `%s`", w.Status, w.Code)
		} else if m.ElseKind != 0 {
			w := errwire.Of(m.ElseKind)
			answer += fmt.Sprintf("; %d `%s` when %s", w.Status, w.Code, m.ElseWhen)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", m.Word, answer, m.Does)
	}
	return b.String()
}

// InputTable is the Markdown table of a magic input per callable service
// of reg, shown for the word Empty (any word takes its place).
func InputTable(reg *registry.Registry) string {
	var b strings.Builder
	b.WriteString("| service | magic input (here `" + Empty + "`) |\n|---|---|\n")
	for _, s := range reg.Services {
		if !s.Callable() {
			continue
		}
		in, ok := MagicInput(s, Empty)
		if !ok {
			in = "none: no accepted format can carry the word"
		} else {
			in = "`" + in + "`"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", s.Key, in)
	}
	return b.String()
}
