package registry

import (
	"regexp"
	"strings"

	"cuelang.org/go/cue"
)

// Locations in the operator's CUE files of the parts of a declaration a
// problem found after compilation (by sdr check, sdr try or a reload's
// example checks) is about, so every message can lead with the
// file:line:column to edit.

// locator finds places of one offer's declaration.
type locator struct {
	offer     position                           // the offer's `offer:` field
	normalize position                           // its `normalize:` field
	token     func(off int) (position, bool)     // byte off of the normalize program
	field     func(name string) (position, bool) // a field of the record definition
}

func (c *compiler) locator(v cue.Value, src, record string) *locator {
	l := &locator{}
	l.offer, _ = posOf(v.LookupPath(cue.ParsePath("offer")))
	nv := v.LookupPath(cue.ParsePath("normalize"))
	if p, ok := posOf(nv); ok && !strings.HasPrefix(p.file, "schemas/") {
		l.normalize = p
	} else {
		l.normalize = l.offer
	}
	l.token = func(off int) (position, bool) { return c.tokenPos(nv, src, off) }
	def := c.v.LookupPath(cue.ParsePath(record))
	l.field = func(name string) (position, bool) {
		fv := def.LookupPath(cue.MakePath(cue.Str(name).Optional()))
		if !fv.Exists() {
			fv = def.LookupPath(cue.MakePath(cue.Str(name)))
		}
		if !fv.Exists() {
			return position{}, false
		}
		return posOf(fv)
	}
	return l
}

// At is the file:line:column of o's `offer:` field, "" when unknown.
func (o *Offer) At() string {
	if o.loc == nil || o.loc.offer.file == "" {
		return ""
	}
	return o.loc.offer.String()
}

// NormalizeAt is the file:line:column of o's `normalize:` field (of its
// `offer:` field when the program is not written in an operator's file).
func (o *Offer) NormalizeAt() string {
	if o.loc == nil || o.loc.normalize.file == "" {
		return o.At()
	}
	return o.loc.normalize.String()
}

// WordAt is the file:line:column, inside the CUE string that holds it, of
// word in o's normalize program: the first place where it is an object key
// (followed by ":"), else its first whole-word use; NormalizeAt when the
// program does not use it or the place cannot be told.
func (o *Offer) WordAt(word string) string {
	if o.loc != nil && o.Normalize != nil && word != "" {
		if off := wordOffset(o.Normalize.Source, word); off >= 0 {
			if p, ok := o.loc.token(off); ok {
				return p.String()
			}
		}
	}
	return o.NormalizeAt()
}

// FieldAt is where a record field the normalizer got wrong should be
// fixed: the key that builds it in the normalize program, else its
// declaration in the record definition, else the normalize field. field is
// a Violation's Field ("experience[0].title" names "title").
func (o *Offer) FieldAt(field string) string {
	name := lastName(field)
	if name == "" {
		return o.NormalizeAt()
	}
	if o.loc != nil && o.Normalize != nil {
		if off := wordOffset(o.Normalize.Source, name); off >= 0 {
			if p, ok := o.loc.token(off); ok {
				return p.String()
			}
		}
		if p, ok := o.loc.field(name); ok {
			return p.String()
		}
	}
	return o.NormalizeAt()
}

// lastName is the last object key of a Violation field path.
func lastName(field string) string {
	for field != "" {
		i := strings.LastIndexAny(field, ".[")
		last := field[i+1:]
		if i >= 0 && field[i] == '[' {
			field = field[:i]
			continue
		}
		return strings.TrimSuffix(last, "]")
	}
	return ""
}

// wordOffset is the byte offset of word in src: first as an object key,
// else as a whole word; -1 when absent.
func wordOffset(src, word string) int {
	q := regexp.QuoteMeta(word)
	lead := `(?:^|[^A-Za-z0-9_$.])`
	if !strings.HasPrefix(word, "$") {
		lead = `(?:^|[^A-Za-z0-9_$])`
	}
	key := regexp.MustCompile(lead + `"?(` + q + `)"?\s*:`)
	if m := key.FindStringSubmatchIndex(src); m != nil {
		return m[2]
	}
	use := regexp.MustCompile(lead + `(` + q + `)(?:[^A-Za-z0-9_]|$)`)
	if m := use.FindStringSubmatchIndex(src); m != nil {
		return m[2]
	}
	return -1
}
