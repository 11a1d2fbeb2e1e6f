package servicecheck

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/itchyny/gojq"

	"socialrouter/caddymodule/normalize"
	"socialrouter/caddymodule/registry"
)

// DropReason says which expression of o's normalize program dropped item
// (a data item that gave no record), with its file:line:column in the
// operator's CUE file: the `if … then empty`, the `select(…)` (or
// `objects`, `strings`, …), the `E as $x` whose E yields nothing, or the
// `{…}` one of whose values yields nothing. accidental is true for the
// last two, which are never a deliberate guard: a field of another type
// made the whole record vanish.
func DropReason(ctx context.Context, o *registry.Offer, item json.RawMessage, input, now string) (at, why string, accidental bool) {
	word, why, accidental := newDropper(o).reason(ctx, item, input, now)
	return o.WordAt(word), why, accidental
}

// boundPaths are the object paths (".author") the `E as $x` bindings of
// o's program start from: the robustness mutations give each a value of
// the wrong type, even when the example lacks it.
func boundPaths(o *registry.Offer) []string {
	var out []string
	for _, s := range newDropper(o).sites {
		if !s.bind {
			continue
		}
		if m := leadingPath.FindStringSubmatch(s.slot.String()); m != nil {
			out = append(out, strings.ReplaceAll(m[1], "?", ""))
		}
	}
	return out
}

var leadingPath = regexp.MustCompile(`^\(*\s*((?:\.[A-Za-z_][A-Za-z0-9_]*\??)+)`)

// dropper finds a drop site by running the program with one site made to
// fail when it yields nothing: the first (in source order) that fails is
// the expression that dropped the item, and the last of the sites inside
// it that fail says why. Variants are compiled as they are needed and
// live as long as the dropper (one check of one offer): a program has
// dozens of sites, a few MB of compiled variants. Not safe for concurrent
// use (a variant is made by swapping a site in the parsed program).
type dropper struct {
	o     *registry.Offer
	q     *gojq.Query
	sites []*dropSite
	progs map[int]*normalize.Program // compiled variants; nil: does not compile
}

func newDropper(o *registry.Offer) *dropper {
	d := &dropper{o: o, progs: map[int]*normalize.Program{}}
	if q, err := gojq.Parse(o.Normalize.Source); err == nil {
		d.q, d.sites = q, dropSites(q)
	}
	return d
}

// fails reports whether site i, made to fail when it yields nothing, fails
// on v.
func (d *dropper) fails(ctx context.Context, i int, v any, input, now string) bool {
	p, ok := d.progs[i]
	if !ok {
		p = d.sites[i].variant(d.q, i)
		d.progs[i] = p
	}
	if p == nil {
		return false
	}
	_, err := p.Run(ctx, v, input, now)
	return err != nil && strings.Contains(err.Error(), siteMark(i))
}

func (d *dropper) reason(ctx context.Context, item json.RawMessage, input, now string) (word, why string, accidental bool) {
	var v any
	if json.Unmarshal(item, &v) != nil {
		return "", "the program yielded null or nothing", false
	}
	first := -1
	for i := range d.sites {
		if d.fails(ctx, i, v, input, now) {
			first = i
			break
		}
	}
	if first < 0 {
		return "", "the program yielded null or nothing", false
	}
	outer, inner := d.sites[first], d.sites[first]
	// The sites inside the outer one follow it (source order).
	for j := first + 1; j < len(d.sites) && strings.Contains(outer.text, d.sites[j].text); j++ {
		if d.fails(ctx, j, v, input, now) {
			inner = d.sites[j]
		}
	}
	why = "dropped by " + clip(outer.text)
	if inner != outer {
		why += " (" + clip(inner.text) + " yields nothing)"
	}
	return inner.word, why, outer.accidental
}

// dropSite is an expression of a program that drops the item when it
// yields nothing.
type dropSite struct {
	slot       *gojq.Query // the query made to fail when it yields nothing
	text       string      // the expression, as the operator reads it
	word       string      // the word of the program that locates it
	accidental bool        // an `as` source or an object value, not a guard
	bind       bool        // an `as` source
}

func siteMark(i int) string { return fmt.Sprintf("sdr-drop-site-%d", i) }

// variant compiles q with site i made to fail when it yields nothing.
func (s *dropSite) variant(q *gojq.Query, i int) *normalize.Program {
	wrap, err := gojq.Parse(fmt.Sprintf("first((%s), error(%q))", s.slot, siteMark(i)))
	if err != nil {
		return nil
	}
	saved := *s.slot
	*s.slot = *wrap
	src := q.String()
	*s.slot = saved
	p, err := normalize.Compile(src)
	if err != nil {
		return nil
	}
	return p
}

// selecting names the builtins that yield nothing for what they reject.
var selecting = map[string]bool{
	"empty": true, "select": true, "objects": true, "arrays": true, "strings": true, "numbers": true,
	"booleans": true, "nulls": true, "iterables": true, "scalars": true, "values": true,
}

// dropSites lists the drop sites of q's main query in source order (outer
// before inner). It does not look inside function definitions (the
// prelude), array constructors, reduce, foreach, try or function
// arguments, where an expression that yields nothing does not drop the
// item.
func dropSites(q *gojq.Query) []*dropSite {
	var out []*dropSite
	var query func(q *gojq.Query, ifCond string)
	var term func(t *gojq.Term, slot *gojq.Query, ifCond string)
	query = func(q *gojq.Query, ifCond string) {
		if q == nil {
			return
		}
		if len(q.Patterns) > 0 && q.Left != nil { // E as $x | body
			pats := make([]string, len(q.Patterns))
			for i, p := range q.Patterns {
				pats[i] = p.String()
			}
			out = append(out, &dropSite{slot: q.Left, text: q.Left.String() + " as " + strings.Join(pats, " ?// "), word: firstVar(pats[0]), accidental: true, bind: true})
		}
		if q.Op == gojq.OpComma {
			return // the first output is the record: another branch may give it
		}
		query(q.Left, ifCond)
		if q.Term != nil {
			term(q.Term, q, ifCond)
		}
		query(q.Right, ifCond)
	}
	term = func(t *gojq.Term, slot *gojq.Query, ifCond string) {
		switch {
		case t.Func != nil && selecting[t.Func.Name] && slot.Left == nil && slot.Right == nil && len(slot.FuncDefs) == 0:
			text := t.String()
			if t.Func.Name == "empty" && ifCond != "" {
				text = "if " + ifCond + " then empty"
			}
			out = append(out, &dropSite{slot: slot, text: text, word: t.Func.Name})
		case t.Object != nil:
			for _, kv := range t.Object.KeyVals {
				if kv.Val == nil {
					continue
				}
				out = append(out, &dropSite{slot: kv.Val, text: "{…, " + kv.String() + ", …}", word: kv.Key, accidental: true})
				query(kv.Val, "")
			}
		case t.If != nil:
			query(t.If.Then, t.If.Cond.String())
			for _, e := range t.If.Elif {
				query(e.Then, e.Cond.String())
			}
			query(t.If.Else, "")
		case t.Query != nil:
			query(t.Query, ifCond)
		}
	}
	query(q, "")
	return out
}

// firstVar is the first $variable of a binding pattern.
func firstVar(pattern string) string {
	return regexp.MustCompile(`\$[A-Za-z_][A-Za-z0-9_]*`).FindString(pattern)
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
