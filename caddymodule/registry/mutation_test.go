package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"socialrouter/internal/jsonmutate"
)

// mutationCheck runs mutated items through an offer's normalizer and
// collects, once per offer and failing schema field, an example of what
// broke it.
type mutationCheck struct {
	reg      *Registry
	failures map[string]string // offer + service + field (or "error") → example
	seen     map[string]bool   // records already validated
}

func newMutationCheck(reg *Registry) *mutationCheck {
	return &mutationCheck{reg: reg, failures: map[string]string{}, seen: map[string]bool{}}
}

// check normalizes the item m (described by what for the report): no error,
// and a record, if any, valid against the service's schema.
func (c *mutationCheck) check(r fixtureRun, m any, what string) {
	b, _ := json.Marshal(m)
	rec, ok, err := r.offer.Normalize.NormalizeItem(context.Background(), b, firstInput(r.service), fixtureNow)
	note := func(field, example string) {
		key := r.offer.ID + " " + r.service.Key + " " + field
		if _, dup := c.failures[key]; !dup {
			c.failures[key] = example
		}
	}
	if err != nil {
		note("error", fmt.Sprintf("%s: %v", what, err))
		return
	}
	if !ok || c.seen[string(rec)] {
		return
	}
	c.seen[string(rec)] = true
	err = c.reg.ValidateRecord(r.service, rec)
	if err != nil {
		note(strings.SplitN(err.Error(), ":", 2)[0], what)
	}
	// The gateway's compiled check must judge every record as CUE does.
	if v := r.service.CheckRecord(rec); (v == nil) != (err == nil) {
		note("check disagrees", fmt.Sprintf("%s: CUE %v, CheckRecord %v: %s", what, err, v, rec))
	}
}

// report fails t once per collected failure, in a stable order.
func (c *mutationCheck) report(t *testing.T) {
	keys := make([]string, 0, len(c.failures))
	for k := range c.failures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Errorf("%s (e.g. %s)", k, c.failures[k])
	}
}

// TestNormalizersSurviveNestedMutations replaces every nested value of every
// fixture item, one at a time, by null, a string, a number, an object and
// an array: no normalizer may fail, and every record must validate.
func TestNormalizersSurviveNestedMutations(t *testing.T) {
	c := newMutationCheck(declared(t))
	for _, r := range fixtureRuns(t, c.reg) {
		for _, item := range readItems(t, r.file) {
			var v any
			if json.Unmarshal(item, &v) != nil {
				continue
			}
			for _, repl := range jsonmutate.OddValues {
				jsonmutate.Paths(v, repl, func(path string, m any) {
					c.check(r, m, fmt.Sprintf("%s = %v", path, repl))
				})
			}
		}
	}
	c.report(t)
}

// TestNormalizersSurviveAddedFields sets, on every fixture item, each
// field name its normalizer mentions (whether the fixture has it or not)
// to null, a string, a number, an object, an array and a boolean, at the
// top level and inside every object of the item: no normalizer may fail,
// and every record must validate. It reaches the alternative spellings and
// optional fields no fixture carries.
func TestNormalizersSurviveAddedFields(t *testing.T) {
	c := newMutationCheck(declared(t))
	ident := regexp.MustCompile(`\.([A-Za-z_][A-Za-z0-9_]*)`)
	for _, r := range fixtureRuns(t, c.reg) {
		names := map[string]bool{}
		for _, m := range ident.FindAllStringSubmatch(r.offer.Normalize.Source, -1) {
			names[m[1]] = true
		}
		for _, item := range readItems(t, r.file) {
			var v any
			if json.Unmarshal(item, &v) != nil {
				continue
			}
			// The item itself and each object inside it, as paths to set on.
			var objects []func(set func(map[string]any)) any
			var collect func(cur any, rebuild func(any) any)
			collect = func(cur any, rebuild func(any) any) {
				switch x := cur.(type) {
				case map[string]any:
					objects = append(objects, func(set func(map[string]any)) any {
						m := make(map[string]any, len(x)+1)
						for k, vv := range x {
							m[k] = vv
						}
						set(m)
						return rebuild(m)
					})
					for k, child := range x {
						collect(child, func(nv any) any {
							m := make(map[string]any, len(x))
							for kk, vv := range x {
								m[kk] = vv
							}
							m[k] = nv
							return rebuild(m)
						})
					}
				case []any:
					if len(x) > 0 {
						collect(x[0], func(nv any) any {
							a := append([]any(nil), x...)
							a[0] = nv
							return rebuild(a)
						})
					}
				}
			}
			collect(v, func(nv any) any { return nv })
			for name := range names {
				for _, repl := range jsonmutate.OddValues {
					for _, obj := range objects {
						c.check(r, obj(func(o map[string]any) { o[name] = repl }), fmt.Sprintf("%s = %v", name, repl))
					}
				}
			}
		}
	}
	c.report(t)
}
