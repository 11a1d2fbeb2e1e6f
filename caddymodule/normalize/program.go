package normalize

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/itchyny/gojq"

	"socialrouter/internal/jsonscan"
)

// Program is a compiled jq program of an offer (request or normalize). It
// is compiled once when the registry loads and is safe for concurrent use.
type Program struct {
	// Source is the jq text as declared.
	Source string
	code   *gojq.Code
	// plan is the fast path of a normalize program (plan.go), nil when
	// the program is outside the plan's subset; noPlan then says why.
	plan   *plan
	noPlan string
}

// programVars are bound, in this order, to every program run.
var programVars = []string{"$input", "$now"}

// Compile parses and compiles a jq program (an offer's request program);
// an empty src yields a nil Program.
func Compile(src string) (*Program, error) { return compile(src, false) }

// CompileNormalizer is Compile for a normalize program, which also gets its
// plan (NormalizeItem's fast path) when it fits the plan's subset.
func CompileNormalizer(src string) (*Program, error) { return compile(src, true) }

func compile(src string, normalize bool) (*Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, err
	}
	p := &Program{Source: src}
	if normalize {
		p.plan, p.noPlan = compilePlan(q)
	}
	opts := append([]gojq.CompilerOption{gojq.WithVariables(programVars)}, programFunctions()...)
	if p.code, err = gojq.Compile(q, opts...); err != nil {
		return nil, err
	}
	return p, nil
}

// FastPath reports whether NormalizeItem runs the program on its compiled
// plan rather than on gojq, and when not, why.
func (p *Program) FastPath() (bool, string) {
	switch {
	case p.plan != nil:
		return true, ""
	case p.noPlan == "":
		return false, "not compiled as a normalize program"
	}
	return false, p.noPlan
}

// Run evaluates the program over v (a plain decoded JSON value) and returns
// every output. An error value from the program is returned as the error.
func (p *Program) Run(ctx context.Context, v any, input, now string) ([]any, error) {
	iter := p.code.RunWithContext(ctx, v, input, now)
	var out []any
	for {
		x, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, isErr := x.(error); isErr {
			if h, ok := err.(*gojq.HaltError); ok && h.Value() == nil {
				return out, nil
			}
			return out, err
		}
		out = append(out, x)
	}
}

// NormalizeItem runs a normalize program over one raw upstream item and
// returns the record as JSON, or ok=false when the program drops the item
// (it yields nothing, or null) or the item is an error row (IsErrorItem),
// which is never a record. Top-level null fields are removed: a field is
// present only when the platform exposes it.
//
// The compiled plan runs the item when the program has one; an item the
// plan gives up on (any error included) runs on gojq, the reference.
func (p *Program) NormalizeItem(ctx context.Context, item []byte, input, now string) (rec []byte, ok bool, err error) {
	return p.normalizeItem(ctx, item, input, now, false)
}

// NormalizeCheckedItem is NormalizeItem for an item the caller has
// validated with jsonscan's strict check (the upstream splitter checks a body once, and
// its items need no second check). The plan trusts that check: an item
// that would not pass never crashes it (a panic is recovered and gojq
// decides), but one with a repeated key could be read by its first value
// where gojq keeps the last, so callers pass only what jsonscan's strict check accepted.
func (p *Program) NormalizeCheckedItem(ctx context.Context, item []byte, input, now string) (rec []byte, ok bool, err error) {
	return p.normalizeItem(ctx, item, input, now, true)
}

func (p *Program) normalizeItem(ctx context.Context, item []byte, input, now string, checked bool) (rec []byte, ok bool, err error) {
	return p.appendItem(ctx, nil, item, nil, input, now, checked)
}

// AppendCheckedItem is NormalizeCheckedItem writing the record after dst's
// bytes: out is dst followed by the record when ok, dst as it was when
// not. A caller normalizing many items keeps them in one buffer instead of
// a slice each; the plan writes the record there as it evaluates it, with
// no copy from a buffer of its own (docs/perf-log.md, round 20).
func (p *Program) AppendCheckedItem(ctx context.Context, dst, item []byte, input, now string) (out []byte, ok bool, err error) {
	return p.AppendIndexedItem(ctx, dst, item, nil, input, now)
}

// AppendIndexedItem is AppendCheckedItem for an item whose own members
// the caller's check located (members, as jsonscan.MemberAt gives them,
// every one of the item's, in order; the upstream splitter notes them as
// it checks a body): the plan takes its index of the item from them
// instead of a pass over the item of its own. nil members: none known.
func (p *Program) AppendIndexedItem(ctx context.Context, dst, item []byte, members []jsonscan.Member, input, now string) (out []byte, ok bool, err error) {
	if dst == nil {
		dst = []byte{}
	}
	return p.appendItem(ctx, dst, item, members, input, now, true)
}

// appendItem is the one path of every normalize call: a nil dst asks for
// the record as a fresh slice of its own.
func (p *Program) appendItem(ctx context.Context, dst, item []byte, members []jsonscan.Member, input, now string, checked bool) (out []byte, ok bool, err error) {
	// Every caller (the router, sdr check and try) comes through here, so
	// an error row is dropped whatever the offer's program makes of it:
	// the plan tells one while it indexes the root object, gojq's path
	// asks IsErrorItem first.
	if p.plan != nil && ctx.Err() == nil {
		if out, ok, err := p.plan.normalize(dst, item, members, input, now, checked); err == nil {
			return out, ok, nil
		}
	}
	if IsErrorItem(item) {
		return dst, false, nil
	}
	if dst == nil {
		return p.normalizeGojq(ctx, item, input, now)
	}
	rec, ok, err := p.normalizeGojq(ctx, item, input, now)
	if err != nil || !ok {
		return dst, false, err
	}
	return append(dst, rec...), true, nil
}

// normalizeGojq is NormalizeItem on gojq alone.
func (p *Program) normalizeGojq(ctx context.Context, item []byte, input, now string) (rec []byte, ok bool, err error) {
	var v any
	if err := json.Unmarshal(item, &v); err != nil {
		return nil, false, fmt.Errorf("decoding upstream item: %v", err)
	}
	outs, err := p.Run(ctx, v, input, now)
	if err != nil {
		return nil, false, err
	}
	if len(outs) == 0 || outs[0] == nil {
		return nil, false, nil
	}
	m, isObj := outs[0].(map[string]any)
	if !isObj {
		return nil, false, fmt.Errorf("normalize must yield an object, got %T", outs[0])
	}
	b, err := json.Marshal(WithoutNulls(m))
	return b, true, err
}

// WithoutNulls is m without its null members: m itself when it has none,
// else a copy, never m changed (gojq hands out one map for an object
// literal that reads no input, shared by every run of the program).
func WithoutNulls(m map[string]any) map[string]any {
	nulls := 0
	for _, v := range m {
		if v == nil {
			nulls++
		}
	}
	if nulls == 0 {
		return m
	}
	out := make(map[string]any, len(m)-nulls)
	for k, v := range m {
		if v != nil {
			out[k] = v
		}
	}
	return out
}
