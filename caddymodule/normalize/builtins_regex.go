package normalize

import "regexp"

// testNode is test(re) for a constant re.
type testNode struct{ re *regexp.Regexp }

func (n *testNode) one(_ *env, in value) (value, error) {
	if in.k != kStr {
		return vNull, errJQ
	}
	return boolValue(n.re.MatchString(in.str())), nil
}

func (n *testNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOne(n, e, in, out)
}

// captureNode is capture(re): the named groups of the first match.
type captureNode struct {
	re     *regexp.Regexp
	names  []string // sorted, unique
	groups []int    // group index per name (the last group of that name)
}

func (n *captureNode) opt(e *env, in value) (value, bool, error) {
	if in.k != kStr {
		return vNull, false, errJQ
	}
	s := in.str()
	m := n.re.FindStringSubmatchIndex(s)
	if m == nil {
		return vNull, false, nil
	}
	c := e.newObj(len(n.names), true)
	copy(c.keys, n.names)
	for i, g := range n.groups {
		if m[2*g] < 0 {
			c.vals[i] = vNull
		} else {
			c.vals[i] = strValue(s[m[2*g]:m[2*g+1]])
		}
	}
	return value{k: kObj, c: c}, true, nil
}

func (n *captureNode) eval(e *env, in value, out []value) ([]value, error) {
	return evalOpt(n, e, in, out)
}

// scanNode is scan(re) for a pattern that cannot match the empty string.
type scanNode struct{ re *regexp.Regexp }

func (n *scanNode) eval(e *env, in value, out []value) ([]value, error) {
	if in.k != kStr {
		return out, errJQ
	}
	s := in.str()
	groups := n.re.NumSubexp()
	for _, m := range n.re.FindAllStringSubmatchIndex(s, -1) {
		if groups == 0 {
			out = append(out, strValue(s[m[0]:m[1]]))
			continue
		}
		buf := e.getBuf()
		for g := 1; g <= groups; g++ {
			if m[2*g] < 0 {
				buf = append(buf, vNull)
			} else {
				buf = append(buf, strValue(s[m[2*g]:m[2*g+1]]))
			}
		}
		out = append(out, e.newArr(buf))
		e.putBuf(buf)
	}
	return out, nil
}

// subNode is sub(re; "literal"): the first match replaced.
type subNode struct {
	re   *regexp.Regexp
	repl string
}

func (n *subNode) one(e *env, in value) (value, error) {
	if in.k != kStr {
		return vNull, errJQ
	}
	s := in.str()
	m := n.re.FindStringIndex(s)
	if m == nil {
		return in, nil
	}
	return strValue(e.concat(s[:m[0]], n.repl, s[m[1]:])), nil
}

func (n *subNode) eval(e *env, in value, out []value) ([]value, error) { return evalOne(n, e, in, out) }
