package normalize

import (
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
)

// suffix compiles base followed by s, as gojq's compileTermSuffix does: x?
// wraps only the last suffix (or the whole term) in try.
func (c *planCompiler) suffix(base *gojq.Term, s *gojq.Suffix, in *site) (node, error) {
	switch {
	case s.Index != nil:
		return c.index(base, s.Index, in)
	case s.Iter:
		b, err := c.term(base, in)
		if err != nil {
			return nil, err
		}
		return mkPipe(b, iterNode{}), nil
	case s.Optional:
		if n := len(base.SuffixList); n > 0 {
			var u *gojq.Term
			switch last := base.SuffixList[n-1]; {
			case last.Index != nil:
				u = &gojq.Term{Type: gojq.TermTypeIndex, Index: last.Index}
			case last.Iter:
				u = &gojq.Term{Type: gojq.TermTypeIdentity, SuffixList: []*gojq.Suffix{{Iter: true}}}
			}
			if u != nil {
				pre := *base
				pre.SuffixList = base.SuffixList[:n-1]
				b, err := c.term(&pre, in)
				if err != nil {
					return nil, err
				}
				body, err := c.term(u, nil)
				if err != nil {
					return nil, err
				}
				return mkPipe(b, mkTry(body)), nil
			}
		}
		body, err := c.term(base, in)
		if err != nil {
			return nil, err
		}
		return mkTry(body), nil
	}
	return nil, unsupported("suffix " + s.String())
}

func mkTry(body node) node {
	if b, ok := asOpt(body); ok {
		return &tryOptNode{b}
	}
	return &tryNode{body}
}

// indexKey is the constant key of x (gojq's toIndexKey): a string or an
// int.
func indexKey(x *gojq.Index) (any, bool) {
	switch {
	case x.Name != "":
		return x.Name, true
	case x.Str != nil:
		if x.Str.Queries == nil {
			return x.Str.Str, true
		}
		return nil, false
	case x.IsSlice || x.Start == nil || x.Start.Term == nil:
		return nil, false
	}
	t := x.Start.Term
	if len(t.SuffixList) > 0 {
		return nil, false
	}
	var num string
	neg := false
	switch t.Type {
	case gojq.TermTypeString:
		if t.Str.Queries == nil {
			return t.Str.Str, true
		}
		return nil, false
	case gojq.TermTypeNumber:
		num = t.Number
	case gojq.TermTypeUnary:
		if t.Unary.Op != gojq.OpSub || t.Unary.Term.Type != gojq.TermTypeNumber || len(t.Unary.Term.SuffixList) > 0 {
			return nil, false
		}
		num, neg = t.Unary.Term.Number, true
	default:
		return nil, false
	}
	v, err := numberConst(num)
	if err != nil {
		return nil, false
	}
	i := 0
	if v.isInt() {
		i = v.int()
		if neg {
			if i == math.MinInt {
				return nil, false
			}
			i = -i
		}
	} else {
		f := v.float()
		if neg {
			f = -f
		}
		i = floatToInt(f)
	}
	return i, true
}

func (c *planCompiler) index(base *gojq.Term, x *gojq.Index, in *site) (node, error) {
	if x.IsSlice {
		return nil, unsupported("slices")
	}
	b, err := c.term(base, in)
	if err != nil {
		return nil, err
	}
	if key, ok := indexKey(x); ok {
		switch k := key.(type) {
		case string:
			f := &fieldNode{key: k}
			if base.Type == gojq.TermTypeIdentity && len(base.SuffixList) == 0 && in != nil {
				f.site, f.slot = in, in.slot(k)
			} else if base.Type == gojq.TermTypeFunc && len(base.SuffixList) == 0 && len(base.Func.Args) == 0 {
				if v := c.lookupVar(base.Func.Name); v != nil {
					f.site, f.slot = v.site, v.site.slot(k)
				}
			}
			return mkPipe(b, f), nil
		case int:
			return mkPipe(b, &indexNode{k}), nil
		}
	}
	if x.Str != nil {
		return nil, unsupported("interpolated index")
	}
	k, err := c.query(x.Start, in)
	if err != nil {
		return nil, err
	}
	// base[key] is a binary operator on base and key (the key's outputs
	// in the outer loop, as gojq does).
	return mkBin((*env).indexBy, b, k), nil
}

func numberConst(s string) (value, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return intValue(int(i)), nil
	}
	if strings.ContainsAny(s, ".eE") {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatValue(f), nil
		}
	}
	return vNull, unsupported("number literal " + s)
}

// constString is the value of q when q is a plain string literal.
func constString(q *gojq.Query) (string, bool) {
	if q.Term == nil || q.Term.Type != gojq.TermTypeString || len(q.Term.SuffixList) > 0 || q.Term.Str.Queries != nil {
		return "", false
	}
	return q.Term.Str.Str, true
}

// constValues is the outputs of n when n is made of constants.
func constValues(n node) ([]value, bool) {
	switch n := n.(type) {
	case *constNode:
		return []value{n.v}, true
	case emptyNode:
		return nil, true
	case *commaNode:
		l, ok := constValues(n.l)
		if !ok {
			return nil, false
		}
		r, ok := constValues(n.r)
		return append(l, r...), ok
	}
	return nil, false
}

func (c *planCompiler) str(s *gojq.String, in *site) (node, error) {
	if s.Queries == nil {
		return &constNode{strValue(s.Str)}, nil
	}
	var parts []node
	for _, q := range s.Queries {
		n, err := c.query(q, in)
		if err != nil {
			return nil, err
		}
		if q.Term == nil || q.Term.Str == nil {
			n = mkPipe(n, &fn0Node{bToString, "tostring"})
		}
		parts = append(parts, n)
	}
	ones := make([]oner, 0, len(parts))
	for _, p := range parts {
		if o, ok := asOne(p); ok {
			ones = append(ones, o)
		}
	}
	if len(ones) == len(parts) {
		return &interpNode{ones}, nil
	}
	n := parts[0]
	for _, p := range parts[1:] {
		n = mkBin(opAdd, n, p)
	}
	return n, nil
}

func (c *planCompiler) ifq(x *gojq.If, in *site) (node, error) {
	cond, then, err := c.query2(x.Cond, in, x.Then, in)
	if err != nil {
		return nil, err
	}
	var els node = identNode{}
	switch {
	case len(x.Elif) > 0:
		els, err = c.ifq(&gojq.If{Cond: x.Elif[0].Cond, Then: x.Elif[0].Then, Elif: x.Elif[1:], Else: x.Else}, in)
	case x.Else != nil:
		els, err = c.query(x.Else, in)
	}
	if err != nil {
		return nil, err
	}
	if t, ok := cond.(*typeIsNode); ok {
		return mkTypeSwitch(t, then, els), nil
	}
	co, cok := asOne(cond)
	to, tok := asOne(then)
	eo, eok := asOne(els)
	if cok && tok && eok {
		return mkIf1(co, to, eo), nil
	}
	tp, tok := asOpt(then)
	ep, eok := asOpt(els)
	if cok && tok && eok {
		return &ifOptNode{co, tp, ep}, nil
	}
	return &ifNode{cond, then, els}, nil
}

func (c *planCompiler) object(o *gojq.Object, in *site) (node, error) {
	if len(o.KeyVals) == 0 {
		return &constNode{value{k: kObj, c: &comp{sorted: true}}}, nil
	}
	s, own := in, in == nil
	if own {
		s = &site{keys: map[string]int{}}
	}
	keys := make([]string, len(o.KeyVals))
	vals := make([]node, len(o.KeyVals))
	for i, kv := range o.KeyVals {
		var err error
		switch {
		case kv.Key != "" && kv.Key[0] == '$':
			if kv.Val != nil {
				return nil, unsupported("object keys from variables")
			}
			v := c.lookupVar(kv.Key)
			if v == nil {
				return nil, unsupported("variable " + kv.Key)
			}
			keys[i], vals[i] = kv.Key[1:], &varNode{v.slot}
			continue
		case kv.Key != "":
			keys[i] = kv.Key
		case kv.KeyString != nil && kv.KeyString.Queries == nil:
			keys[i] = kv.KeyString.Str
		default:
			return nil, unsupported("computed object keys")
		}
		if kv.Val == nil {
			vals[i] = &fieldNode{key: keys[i], site: s, slot: s.slot(keys[i])}
			continue
		}
		if vals[i], err = c.query(kv.Val, s); err != nil {
			return nil, err
		}
	}
	var sorted []string
	last := map[string]int{}
	for i, k := range keys {
		if _, dup := last[k]; !dup {
			sorted = append(sorted, k)
		}
		last[k] = i
	}
	slices.Sort(sorted)
	slot := make([]int, len(keys))
	consts := true
	var ones []oner
	for i, k := range keys {
		slot[i] = -1
		if last[k] == i {
			slot[i], _ = slices.BinarySearch(sorted, k)
		}
		if o, ok := asOne(vals[i]); ok {
			ones = append(ones, o)
		}
		if _, ok := vals[i].(*constNode); !ok {
			consts = false
		}
	}
	if consts {
		cv := &comp{keys: sorted, vals: make([]value, len(sorted)), sorted: true, quoted: quoteKeys(sorted)}
		for i, v := range vals {
			if s := slot[i]; s >= 0 {
				cv.vals[s] = v.(*constNode).v
			}
		}
		return &constNode{value{k: kObj, c: cv}}, nil
	}
	if !own || s.reads < indexThreshold {
		s = nil
	}
	if len(ones) == len(vals) {
		n := &objectNode{keys: sorted, quoted: quoteKeys(sorted), vals: ones, slot: slot, site: s, fields: make([]*fieldPipeNode, len(ones)), inSite: in}
		if own {
			n.inSite = n.site
		}
		for j, v := range ones {
			if f, ok := v.(*fieldPipeNode); ok && n.inSite != nil && f.f.site == n.inSite {
				n.fields[j] = f
			}
		}
		return n, nil
	}
	opts := make([]opter, 0, len(vals))
	for _, v := range vals {
		if o, ok := asOpt(v); ok {
			opts = append(opts, o)
		}
	}
	if len(opts) == len(vals) {
		return &objectOptNode{keys: sorted, quoted: quoteKeys(sorted), vals: opts, slot: slot, site: s}, nil
	}
	return &objectsNode{keys: sorted, quoted: quoteKeys(sorted), vals: vals, slot: slot, site: s}, nil
}

func (c *planCompiler) fn(f *gojq.Func, in *site) (node, error) {
	name, args := f.Name, f.Args
	if strings.HasPrefix(name, "$") {
		if v := c.lookupVar(name); v != nil && len(args) == 0 {
			return &varNode{v.slot}, nil
		}
		return nil, unsupported("variable " + name)
	}
	if def := c.lookupFunc(name, len(args)); def != nil {
		return c.call(def, in)
	}
	switch len(args) {
	case 0:
		if name == "empty" {
			return emptyNode{}, nil
		}
		if t, ok := typeFilters[name]; ok {
			return t, nil
		}
		if b, ok := fn0s[name]; ok {
			return &fn0Node{b, name}, nil
		}
	case 1:
		switch name {
		case "select":
			cond, err := c.query(args[0], in)
			if err != nil {
				return nil, err
			}
			if c, ok := asOne(cond); ok {
				return &selectOptNode{c}, nil
			}
			return &selectNode{cond}, nil
		case "map", "with_entries":
			g, err := c.query(args[0], nil)
			if err != nil {
				return nil, err
			}
			if name == "map" {
				return &mapNode{g}, nil
			}
			return &withEntriesNode{g}, nil
		case "del":
			if q := args[0]; q.Op == gojq.OpPipe && len(q.Patterns) == 0 &&
				q.Left.Term != nil && q.Left.Term.Type == gojq.TermTypeRecurse && len(q.Left.Term.SuffixList) == 0 &&
				q.Right.Term != nil && q.Right.Term.Type == gojq.TermTypeFunc && len(q.Right.Term.SuffixList) == 0 &&
				q.Right.Term.Func.Name == "nulls" && len(q.Right.Term.Func.Args) == 0 {
				return pruneNode{}, nil
			}
			return nil, unsupported("del(f) other than del(.. | nulls)")
		case "test", "capture", "scan":
			pat, ok := constString(args[0])
			if !ok {
				return nil, unsupported(name + " with a computed pattern")
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, unsupported("invalid regular expression " + strconv.Quote(pat))
			}
			switch name {
			case "test":
				return &testNode{re}, nil
			case "scan":
				if !nonEmptyMatches(pat) {
					return nil, unsupported("scan with a pattern that can match the empty string")
				}
				return &scanNode{re}, nil
			}
			n := &captureNode{re: re}
			at := map[string]int{}
			for g, nm := range re.SubexpNames() {
				if nm != "" {
					at[nm] = g
				}
			}
			for nm := range at {
				n.names = append(n.names, nm)
			}
			slices.Sort(n.names)
			for _, nm := range n.names {
				n.groups = append(n.groups, at[nm])
			}
			return n, nil
		}
		if b, ok := fn1s[name]; ok {
			arg, err := c.query(args[0], in)
			if err != nil {
				return nil, err
			}
			// f($a) is a binary operator on the input and $a: one
			// output per output of the argument.
			return mkBin(b, identNode{}, arg), nil
		}
	case 2:
		if name == "sub" {
			pat, ok1 := constString(args[0])
			repl, ok2 := constString(args[1])
			if !ok1 || !ok2 {
				return nil, unsupported("sub with a computed pattern or replacement")
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, unsupported("invalid regular expression " + strconv.Quote(pat))
			}
			return &subNode{re, repl}, nil
		}
	}
	return nil, unsupported("function " + name + "/" + strconv.Itoa(len(args)))
}

// nonEmptyMatches reports whether every match of pat is at least one
// character long.
func nonEmptyMatches(pat string) bool {
	r, err := syntax.Parse(pat, syntax.Perl)
	if err != nil {
		return false
	}
	var minLen func(r *syntax.Regexp) int
	minLen = func(r *syntax.Regexp) int {
		switch r.Op {
		case syntax.OpLiteral:
			return len(r.Rune)
		case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			return 1
		case syntax.OpCapture, syntax.OpPlus:
			return minLen(r.Sub[0])
		case syntax.OpRepeat:
			return r.Min * minLen(r.Sub[0])
		case syntax.OpConcat:
			n := 0
			for _, s := range r.Sub {
				n += minLen(s)
			}
			return n
		case syntax.OpAlternate:
			n := math.MaxInt
			for _, s := range r.Sub {
				n = min(n, minLen(s))
			}
			return n
		}
		return 0
	}
	return minLen(r.Simplify()) > 0
}
