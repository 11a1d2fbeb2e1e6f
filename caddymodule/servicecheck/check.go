package servicecheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"socialrouter/caddymodule/normalize"
	"socialrouter/caddymodule/registry"
)

// Result is what the normalizer of an offer made of one upstream item.
type Result struct {
	Index int
	// Record is the record as the gateway makes it; nil when the item was
	// dropped or failed.
	Record json.RawMessage
	// Err is the normalizer's error on the item.
	Err error
	// Violation says how Record is off the service's record schema.
	Violation *registry.Violation
	// Disagree is set when gojq, the reference engine, makes something
	// else of the item than the gateway's engine (the compiled fast path).
	Disagree string
}

// Run normalizes items with o's program as the gateway does, and again on
// gojq alone, and checks each record against the service's schema.
func Run(ctx context.Context, o *registry.Offer, items []json.RawMessage, input, now string) []Result {
	out := make([]Result, len(items))
	for i, item := range items {
		r := Result{Index: i}
		rec, ok, err := o.Normalize.NormalizeItem(ctx, item, input, now)
		ref, refErr := reference(ctx, o.Normalize, item, input, now)
		switch {
		case err != nil:
			r.Err = err
		case ok:
			r.Record = rec
			r.Violation = o.Service.CheckRecord(rec)
		}
		if d := disagreement(rec, ok, err, ref, refErr); d != "" {
			r.Disagree = d
		}
		out[i] = r
	}
	return out
}

// reference is what gojq alone, the reference engine, makes of item
// through the program's jq entry point: the first output (nil when there
// is none) as plain JSON values, or the program's error.
func reference(ctx context.Context, p *normalize.Program, item []byte, input, now string) (any, error) {
	if normalize.IsErrorItem(item) { // the pipeline's guard, before any engine
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(item, &v); err != nil {
		return nil, fmt.Errorf("decoding upstream item: %v", err)
	}
	outs, err := p.Run(ctx, v, input, now)
	if err != nil || len(outs) == 0 {
		return nil, err
	}
	// Through JSON, so numbers compare as the gateway's record decodes.
	b, err := json.Marshal(outs[0])
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// disagreement describes how the gateway's answer (rec, ok, err) and the
// reference's differ, or "". The gateway serves an object with its
// top-level nulls left out, and drops an item whose output is null.
func disagreement(rec []byte, ok bool, err error, ref any, refErr error) string {
	if (err == nil) != (refErr == nil) {
		return fmt.Sprintf("gateway error %v, gojq error %v", err, refErr)
	}
	if err != nil {
		return ""
	}
	want, isObj := ref.(map[string]any)
	if ref != nil && !isObj {
		return fmt.Sprintf("gojq yields a %T, not an object", ref)
	}
	for k, x := range want {
		if x == nil {
			delete(want, k)
		}
	}
	if !ok {
		if ref != nil {
			return fmt.Sprintf("the gateway drops the item, gojq makes %v", ref)
		}
		return ""
	}
	var got any
	if json.Unmarshal(rec, &got) != nil || !reflect.DeepEqual(got, any(want)) {
		refJSON, _ := json.Marshal(want)
		return fmt.Sprintf("gateway made %s, gojq made %s", rec, refJSON)
	}
	return ""
}

// Problem is one reason an offer's example fails the check.
type Problem struct {
	// At is the file:line:column, in the operator's CUE file, of what to
	// fix: the word of the normalize program at fault, else the program,
	// else the offer.
	At string
	// File is the example's path inside the services directory.
	File  string
	Offer string
	Msg   string
	// Note marks what the check reports without failing (sdr try prints
	// the same note): a record that vanishes when a field has another type.
	Note bool
}

func (p Problem) String() string {
	s := fmt.Sprintf("%s: offer %s: %s", p.File, p.Offer, p.Msg)
	if p.Note {
		s = "note: " + s
	}
	if p.At != "" {
		s = p.At + ": " + s
	}
	return s
}

// exampleNow is the $now of example runs, fixed so runs compare.
const exampleNow = "2026-01-02T03:04:05.000Z"

// CheckExamples runs every live offer's normalizer over its example
// payload. It reports an offer with no example, no normalizer or no record
// from its example, a data item that gives no record, an error row that
// gives one, a record off the schema, a normalizer error and any item the
// two engines disagree on.
func CheckExamples(ctx context.Context, reg *registry.Registry, fsys fs.FS) []Problem {
	return problemsOnly(check(ctx, reg, fsys, false))
}

// Check is CheckExamples plus the robustness check (robustness) of every
// live offer over its example: what `sdr check` runs and what a reload
// refuses a registry for.
func Check(ctx context.Context, reg *registry.Registry, fsys fs.FS) []Problem {
	return problemsOnly(check(ctx, reg, fsys, true))
}

// problemsOnly leaves the notes out of ps.
func problemsOnly(ps []Problem) []Problem {
	out := ps[:0:0]
	for _, p := range ps {
		if !p.Note {
			out = append(out, p)
		}
	}
	return out
}

func check(ctx context.Context, reg *registry.Registry, fsys fs.FS, robust bool) []Problem {
	var offers []*registry.Offer
	for _, s := range reg.Services {
		offers = append(offers, s.LiveOffers()...)
	}
	// Offers are checked in parallel (the robustness mutations are most of
	// a cold reload's work); problems keep the declarations' order.
	per := make([][]Problem, len(offers))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, o := range offers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			per[i] = checkOffer(ctx, reg, fsys, o, robust)
		}()
	}
	wg.Wait()
	var probs []Problem
	for _, p := range per {
		probs = append(probs, p...)
	}
	return probs
}

// checkOffer is check for one live offer.
func checkOffer(ctx context.Context, reg *registry.Registry, fsys fs.FS, o *registry.Offer, robust bool) []Problem {
	var probs []Problem
	s := o.Service
	file, items, err := FindExample(fsys, o)
	bad := func(at string, format string, args ...any) {
		probs = append(probs, Problem{At: at, File: file, Offer: s.Key + " " + o.ID, Msg: fmt.Sprintf(format, args...)})
	}
	if err != nil {
		bad(o.NormalizeAt(), "%v", err)
		return probs
	}
	if o.Normalize == nil {
		bad(o.At(), "the offer declares no normalize program")
		return probs
	}
	_, verdicts := judgeItems(ctx, o, items, Input(s), exampleNow)
	for _, p := range verdicts {
		if !p.info {
			bad(p.at, "%s", p.msg)
		}
	}
	if robust {
		for _, p := range robustness(ctx, reg, o, items, Input(s)) {
			bad(p.at, "%s", p.msg)
			probs[len(probs)-1].Note = p.info
		}
	}
	return probs
}

// itemProblem is one verdict of the checks on an item (or, with index -1,
// on the whole example), with its CUE position. sdr check and sdr try print
// the same verdicts: a problem (info false) fails both, a note (info true)
// fails neither.
type itemProblem struct {
	at, msg string
	info    bool
}

// judgeItems runs o over items as the gateway does and gives every verdict
// of the checks: an item that fails, a record off the schema, an error row
// that gives a record, a data item that gives none, a disagreement of the
// engines, no record at all (problems); an error row, an item with no data
// (notes). It returns the results too, for sdr try to print the records.
func judgeItems(ctx context.Context, o *registry.Offer, items []json.RawMessage, input, now string) ([]Result, []itemProblem) {
	var out []itemProblem
	results := Run(ctx, o, items, input, now)
	records := 0
	for _, r := range results {
		errRow := normalize.IsErrorItem(items[r.Index])
		switch {
		case r.Err != nil:
			out = append(out, itemProblem{at: o.NormalizeAt(), msg: fmt.Sprintf("item %d: normalize error: %v (guard the field with str, toint, tonum, iso8601 or .a?.b?)", r.Index, r.Err)})
		case r.Record != nil && errRow:
			out = append(out, itemProblem{at: o.NormalizeAt(), msg: fmt.Sprintf("item %d: an error row (it carries %s) gave a record", r.Index, strings.Join(normalize.ErrorMarkers, ", "))})
		case r.Record != nil && !hasData(items[r.Index]):
			out = append(out, itemProblem{at: o.NormalizeAt(), msg: fmt.Sprintf("item %d: an item with no data gave a record (billed for nothing): drop it (if type != \"object\" or (.id == null and .url == null) then empty else … end)", r.Index)})
		case r.Violation != nil:
			out = append(out, itemProblem{at: o.FieldAt(r.Violation.Field), msg: fmt.Sprintf("item %d: record off %s: %v (never served nor billed: fix the program's key or the record definition)", r.Index, o.Service.Record, r.Violation)})
		case r.Record != nil:
			records++
		case errRow:
			out = append(out, itemProblem{at: o.NormalizeAt(), msg: fmt.Sprintf("item %d: error row (never a record)", r.Index), info: true})
		case !hasData(items[r.Index]):
			out = append(out, itemProblem{at: o.NormalizeAt(), msg: fmt.Sprintf("item %d: no data (every field is null or empty): no record, as it should", r.Index), info: true})
		default:
			at, why, _ := DropReason(ctx, o, items[r.Index], input, now)
			out = append(out, itemProblem{at: at, msg: fmt.Sprintf("item %d: a data item gave no record: %s (keep it there, or, if it is no entity, make it an error row or take it out of the example)", r.Index, why)})
		}
		if r.Disagree != "" {
			out = append(out, itemProblem{at: o.NormalizeAt(), msg: fmt.Sprintf("item %d: the engines disagree: %s", r.Index, r.Disagree)})
		}
	}
	if records == 0 {
		out = append(out, itemProblem{at: o.NormalizeAt(), msg: fmt.Sprintf("no record from %d items: nothing the gateway would serve (add an item of data to the example)", len(items))})
	}
	return results, out
}

// hasData reports whether an upstream item carries a value: an object or
// array with some non-null, non-empty leaf. An item without (null, {},
// an object of nulls) must give no record.
func hasData(item json.RawMessage) bool {
	var v any
	if json.Unmarshal(item, &v) != nil {
		return false
	}
	var leaf func(v any) bool
	leaf = func(v any) bool {
		switch x := v.(type) {
		case nil:
			return false
		case string:
			return x != ""
		case map[string]any:
			for _, c := range x {
				if leaf(c) {
					return true
				}
			}
			return false
		case []any:
			for _, c := range x {
				if leaf(c) {
					return true
				}
			}
			return false
		}
		return true
	}
	switch v.(type) {
	case map[string]any, []any:
		return leaf(v)
	}
	return false
}

// SlowOffers names the offers whose normalizer the compiled plan cannot run,
// with the construct that kept it off: they work, every item on gojq, at
// several times the CPU per record, so check says so without failing.
func SlowOffers(reg *registry.Registry) []string {
	var out []string
	for _, s := range reg.Services {
		for _, o := range s.LiveOffers() {
			if o.Normalize == nil {
				continue
			}
			if fast, why := o.Normalize.FastPath(); !fast {
				out = append(out, fmt.Sprintf("offer %s of %s normalizes on gojq, several times slower than the compiled plan: %s", o.ID, s.Key, why))
			}
		}
	}
	return out
}

// Input is the input examples are run with: the service's first accepted
// example, as $input.
func Input(s *registry.Service) string {
	if len(s.Accepts) == 0 {
		return ""
	}
	return s.Accepts[0].Example
}
