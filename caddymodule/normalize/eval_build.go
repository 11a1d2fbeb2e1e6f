package normalize

// objectNode builds an object from constant keys, every value having one
// output. keys are sorted and unique; vals holds every value expression in
// declaration order, slot[j] the key index of vals[j] or -1 when a later
// declaration of the same key overrides it.
type objectNode struct {
	keys   []string
	quoted []string // quoteKeys(keys)
	vals   []oner
	slot   []int
	site   *site // set when the object's input gets its own index
	// fields[j] is vals[j] when it is .key | f read through the index of
	// inSite, the site of the object's input: the object reads it from
	// the slots directly.
	fields []*fieldPipeNode
	inSite *site
}

// enter indexes a raw object input for the object's own site (pushed:
// the caller pops the frame when done) and returns the slots its field
// reads take values from, or nil; objectNode and emitObject share it.
func (n *objectNode) enter(e *env, in value) (slots []span, pushed bool) {
	if in.k != kObj || !in.raw() || in.pruned() {
		return nil, false
	}
	if n.site != nil {
		e.pushFrame(n.site, in.s)
		pushed = true
	}
	if n.inSite != nil {
		slots = e.frameSlots(n.inSite, in.s)
	}
	return slots, pushed
}

func (n *objectNode) one(e *env, in value) (value, error) {
	slots, pushed := n.enter(e, in)
	if pushed {
		defer e.popFrame()
	}
	c := e.newObjKeys(n.keys, n.quoted)
	for j, x := range n.vals {
		var v value
		var err error
		if f := n.fields[j]; f != nil && slots != nil {
			v = vNull
			if sp := slots[f.f.slot]; sp.end != 0 {
				v = rawValue(e.src[sp.start:sp.end])
			}
			if v.k == kNull && f.onNull != nil {
				v = *f.onNull
			} else {
				v, err = f.r.one(e, v)
			}
		} else {
			v, err = x.one(e, in)
		}
		if err != nil {
			return vNull, err
		}
		if s := n.slot[j]; s >= 0 {
			c.vals[s] = v
		}
	}
	return value{k: kObj, c: c}, nil
}

func (n *objectNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// objectsNode is objectNode when some value has other than one output: one
// object per combination, the first key varying slowest (as gojq does).
type objectsNode struct {
	keys   []string
	quoted []string // quoteKeys(keys)
	vals   []node
	slot   []int
	site   *site
}

func (n *objectsNode) eval(e *env, in value, out []value) ([]value, error) {
	if n.site != nil && in.k == kObj && in.raw() && !in.pruned() {
		e.pushFrame(n.site, in.s)
		defer e.popFrame()
	}
	bufs := make([][]value, len(n.vals))
	errs := make([]error, len(n.vals))
	defer func() {
		for _, b := range bufs {
			if b != nil {
				e.putBuf(b)
			}
		}
	}()
	for j, x := range n.vals {
		bufs[j], errs[j] = x.eval(e, in, e.getBuf())
		if len(bufs[j]) == 0 {
			return out, errs[j]
		}
	}
	cur := make([]value, len(n.keys))
	var gen func(j int) error
	gen = func(j int) error {
		if j == len(n.vals) {
			c := e.newObjKeys(n.keys, n.quoted)
			copy(c.vals, cur)
			out = append(out, value{k: kObj, c: c})
			return nil
		}
		for _, v := range bufs[j] {
			if s := n.slot[j]; s >= 0 {
				cur[s] = v
			}
			if err := gen(j + 1); err != nil {
				return err
			}
		}
		return errs[j]
	}
	err := gen(0)
	return out, err
}

// arrayNode is [body].
type arrayNode struct{ body node }

func (n *arrayNode) one(e *env, in value) (value, error) {
	buf, err := n.body.eval(e, in, e.getBuf())
	if err != nil {
		e.putBuf(buf)
		return vNull, err
	}
	v := e.newArr(buf)
	e.putBuf(buf)
	return v, nil
}

func (n *arrayNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// interpNode is a string with interpolations whose parts have one output
// each (tostring applied).
type interpNode struct{ parts []oner }

func (n *interpNode) one(e *env, in value) (value, error) {
	vals := e.getBuf()
	defer e.putBuf(vals)
	for _, p := range n.parts {
		v, err := p.one(e, in)
		if err != nil {
			return vNull, err
		}
		vals = append(vals, v)
	}
	b := e.bytes[:0]
	for _, v := range vals {
		var err error
		if b, err = appendToString(b, v); err != nil {
			return vNull, err
		}
	}
	e.bytes = b[:0]
	return strValue(e.keep(b)), nil
}

func (n *interpNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// bindNode is src as $var | body.
type bindNode struct {
	src, body node
	slot      int
	site      *site
}

func (n *bindNode) bind(e *env, v value) bool {
	e.vars[n.slot] = v
	if n.site != nil && v.k == kObj && v.raw() && !v.pruned() && n.site.reads >= indexThreshold {
		e.pushFrame(n.site, v.s)
		return true
	}
	return false
}

// bindOne binds the one output of src on in, the step bind1Node and
// bindOptNode share; pushed says the caller pops the frame after the body.
func (n *bindNode) bindOne(e *env, src oner, in value) (pushed bool, err error) {
	v, err := src.one(e, in)
	if err != nil {
		return false, err
	}
	return n.bind(e, v), nil
}

func (n *bindNode) eval(e *env, in value, out []value) ([]value, error) {
	return each(e, n.src, in, out, func(v value, out []value) ([]value, error) {
		if n.bind(e, v) {
			defer e.popFrame()
		}
		return n.body.eval(e, in, out)
	})
}

type bind1Node struct {
	src, body oner
	b         bindNode
}

func (n *bind1Node) one(e *env, in value) (value, error) {
	pushed, err := n.b.bindOne(e, n.src, in)
	if pushed {
		defer e.popFrame()
	}
	if err != nil {
		return vNull, err
	}
	return n.body.one(e, in)
}

func (n *bind1Node) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// selectNode is select(cond).
type selectNode struct{ cond node }

func (n *selectNode) eval(e *env, in value, out []value) ([]value, error) {
	return each(e, n.cond, in, out, func(c value, out []value) ([]value, error) {
		if c.truthy() {
			out = append(out, in)
		}
		return out, nil
	})
}

// typeNode is objects, strings, … : select by type.
type typeNode struct{ keep [kObj + 1]bool }

func (n *typeNode) opt(_ *env, in value) (value, bool, error) { return in, n.keep[in.k], nil }

func (n *typeNode) eval(_ *env, in value, out []value) ([]value, error) {
	if n.keep[in.k] {
		out = append(out, in)
	}
	return out, nil
}

// fn0Node is a builtin of no arguments; name is its jq name (emitters
// tell nonempty by it).
type fn0Node struct {
	f    func(e *env, v value) (value, error)
	name string
}

func (n *fn0Node) one(e *env, in value) (value, error)                 { return n.f(e, in) }
func (n *fn0Node) eval(e *env, in value, out []value) ([]value, error) { return evalOne(n, e, in, out) }

// mapNode is map(f): [.[] | f].
type mapNode struct{ f node }

func (n *mapNode) one(e *env, in value) (value, error) {
	items, err := iterNode{}.eval(e, in, e.getBuf())
	defer e.putBuf(items)
	if err != nil {
		return vNull, err
	}
	res := e.getBuf()
	defer e.putBuf(res)
	for _, x := range items {
		if res, err = n.f.eval(e, x, res); err != nil {
			return vNull, err
		}
	}
	return e.newArr(res), nil
}

func (n *mapNode) eval(e *env, in value, out []value) ([]value, error) { return evalOne(n, e, in, out) }

// withEntriesNode is with_entries(f): to_entries | map(f) | from_entries.
type withEntriesNode struct{ f node }

func (n *withEntriesNode) one(e *env, in value) (value, error) {
	ents, err := toEntries(e, in)
	if err != nil {
		return vNull, err
	}
	res := e.getBuf()
	defer e.putBuf(res)
	for _, x := range ents.c.arr {
		if res, err = n.f.eval(e, x, res); err != nil {
			return vNull, err
		}
	}
	return fromEntries(e, res)
}

func (n *withEntriesNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// assignNode is .key = rhs.
type assignNode struct {
	key string
	rhs node
}

func (n *assignNode) eval(e *env, in value, out []value) ([]value, error) {
	buf, rerr := n.rhs.eval(e, in, e.getBuf())
	defer e.putBuf(buf)
	for _, v := range buf {
		w, err := setKey(e, in, n.key, v)
		if err != nil {
			return out, err
		}
		out = append(out, w)
	}
	return out, rerr
}

// setKey is setpath([key]; v).
func setKey(e *env, obj value, key string, v value) (value, error) {
	switch obj.k {
	case kNull:
		c := e.newObj(1, true)
		c.keys[0], c.vals[0] = key, v
		return value{k: kObj, c: c}, nil
	case kObj:
		if obj.pruned() {
			return vNull, errBail
		}
		ps := e.sortedPairs(obj)
		n := len(ps)
		at := n
		for i, p := range ps {
			if p.key == key {
				at = i
				n--
				break
			}
		}
		c := e.newObj(n+1, true)
		j := 0
		inserted := false
		for i, p := range ps {
			if i == at {
				continue
			}
			if !inserted && key < p.key {
				c.keys[j], c.vals[j] = key, v
				j++
				inserted = true
			}
			c.keys[j], c.vals[j] = p.key, p.val
			j++
		}
		if !inserted {
			c.keys[j], c.vals[j] = key, v
		}
		e.releasePairs(ps)
		return value{k: kObj, c: c}, nil
	}
	return vNull, errJQ
}

// pruneNode is del(.. | nulls): every null removed, at any depth.
type pruneNode struct{}

func (pruneNode) one(e *env, in value) (value, error) { return prune(e, in), nil }
func (n pruneNode) eval(e *env, in value, out []value) ([]value, error) {
	return append(out, prune(e, in)), nil
}

// prune marks v: the writer leaves out its nulls at any depth. Other
// readers of a marked array or object bail (nothing but the writer reads
// a record after del(.. | nulls) in the normalizers).
func prune(_ *env, v value) value {
	if v.k >= kArr {
		v.f |= fPrune
	}
	return v
}
