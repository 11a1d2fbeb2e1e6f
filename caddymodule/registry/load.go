package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/normalize"
	"socialrouter/schemas"
)

// Error lists every problem found while compiling the declarations, each
// naming the CUE file and line it comes from.
type Error struct {
	Problems []string
}

// Error leads with the first problem's file:line:column, so a refused
// reload's message points at the operator's file first.
func (e *Error) Error() string {
	return strings.Join(e.Problems, "; ") + fmt.Sprintf(" (%d problem(s) compiling services)", len(e.Problems))
}

// Load compiles every *.cue file of dir together with the embedded schemas.
func Load(dir string) (*Registry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading services directory: %v", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".cue" {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading service file: %v", err)
		}
		files[p] = b
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .cue files in services directory %s", dir)
	}
	return LoadFiles(files)
}

// LoadFS compiles the *.cue files at the root of fsys (an embedded or
// in-memory services directory, such as services.FS) like Load; error
// positions name them services/<file>.
func LoadFS(fsys fs.FS) (*Registry, error) {
	names, err := fs.Glob(fsys, "*.cue")
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("no .cue files in the services directory")
	}
	files := map[string][]byte{}
	for _, n := range names {
		if files["services/"+n], err = fs.ReadFile(fsys, n); err != nil {
			return nil, fmt.Errorf("reading %s: %v", n, err)
		}
	}
	return LoadFiles(files)
}

// Digest returns a short digest of the *.cue files of dir (names and
// contents), or "" when the directory cannot be read. A config that carries
// it changes whenever a declaration does.
func Digest(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	h := sha256.New()
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".cue" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return ""
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// LoadFiles compiles the given service files (name → content) together with
// the embedded schemas. Names are used in error positions.
func LoadFiles(files map[string][]byte) (*Registry, error) {
	inst := build.NewContext().NewInstance("", nil)
	schemaFiles, _ := fs.Glob(schemas.FS, "*.cue")
	for _, name := range schemaFiles {
		b, _ := schemas.FS.ReadFile(name)
		if err := inst.AddFile("schemas/"+name, b); err != nil {
			return nil, cueError(err, cue.Value{})
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := inst.AddFile(n, files[n]); err != nil {
			return nil, cueError(err, cue.Value{})
		}
	}
	if dups := duplicateServices(inst); len(dups) > 0 {
		return nil, &Error{Problems: dups}
	}
	v := cuecontext.New().BuildInstance(inst)
	if err := v.Err(); err != nil {
		return nil, cueError(err, v)
	}
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return nil, cueError(err, v)
	}
	c := &compiler{v: v, files: files}
	r := c.compile()
	if len(c.problems) > 0 {
		return nil, &Error{Problems: c.problems}
	}
	return r, nil
}

// cueError lists CUE's errors, each led by the position in an operator's
// file when there is one (the schema's own positions follow), and naming
// the field.
func cueError(err error, v cue.Value) error {
	var problems []string
	// A value outside a disjunction (a platform typo) comes as one
	// "empty disjunction" error and one conflict per alternative: they
	// become one line listing the alternatives.
	disj := map[string]*disjunction{}
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		path := e.Path()
		key := strings.Join(path, ".")
		if strings.Contains(format, "empty disjunction") {
			disj[key] = &disjunction{slot: len(problems)}
			problems = append(problems, "")
			continue
		}
		lead, schemaAt := errorPositions(e, v, path)
		if d := disj[key]; d != nil && format == "conflicting values %s and %s" && len(args) == 2 {
			d.alts = append(d.alts, fmt.Sprint(args[0]))
			if d.lead == "" {
				d.got, d.lead = fmt.Sprint(args[1]), lead
			}
			continue
		}
		msg := fmt.Sprintf(format, args...)
		if len(path) > 0 {
			msg = "field " + key + ": " + msg
		}
		if lead != "" {
			msg = lead + ": " + msg
		}
		if len(schemaAt) > 0 {
			msg += " (schema: " + strings.Join(schemaAt, ", ") + ")"
		}
		problems = append(problems, msg)
	}
	for key, d := range disj {
		problems[d.slot] = d.message(key, v)
	}
	out := problems[:0]
	for _, p := range problems {
		if p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []string{err.Error()}
	}
	return &Error{Problems: out}
}

// disjunction gathers the conflicts of one value with each alternative.
type disjunction struct {
	slot      int
	alts      []string
	got, lead string
}

func (d *disjunction) message(key string, v cue.Value) string {
	if len(d.alts) == 0 {
		return ""
	}
	alts := d.alts
	what := "an allowed value"
	if strings.HasSuffix(key, ".platform") {
		var platforms []string
		if v.LookupPath(cue.ParsePath("platforms")).Decode(&platforms) == nil && len(platforms) > 0 {
			alts = platforms // in the schema's order
		}
		what = "a platform"
	}
	msg := fmt.Sprintf("field %s: %s is not %s: want one of %s", key, d.got, what, strings.Join(unquote(alts), ", "))
	if d.lead != "" {
		msg = d.lead + ": " + msg
	}
	return msg
}

func unquote(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
		out[i] = s
	}
	return out
}

// errorPositions is the position an error leads with (the first in an
// operator's file, else the value's) and the schema's positions.
func errorPositions(e cueerrors.Error, v cue.Value, path []string) (lead string, schemaAt []string) {
	for _, p := range cueerrors.Positions(e) {
		at := fmt.Sprintf("%s:%d:%d", p.Filename(), p.Line(), p.Column())
		switch {
		case strings.HasPrefix(p.Filename(), "schemas/"):
			schemaAt = append(schemaAt, at)
		case lead == "":
			lead = at
		}
	}
	if lead == "" {
		lead = operatorPos(v, path)
	}
	return lead, schemaAt
}

// operatorPos is the position, in an operator's file, of the value at path
// or of its nearest parent that has one; "" when none does.
func operatorPos(v cue.Value, path []string) string {
	if !v.Exists() {
		return ""
	}
	for n := len(path); n > 0; n-- {
		sels := make([]cue.Selector, 0, n)
		for _, p := range path[:n] {
			if i, err := strconv.Atoi(p); err == nil {
				sels = append(sels, cue.Index(i))
			} else {
				sels = append(sels, cue.Str(strings.Trim(p, `"`)))
			}
		}
		x := v.LookupPath(cue.MakePath(sels...))
		_, parts := x.Expr() // the conjuncts: the schema's and the operator's
		for _, c := range append([]cue.Value{x}, parts...) {
			if pos := c.Pos(); pos.IsValid() && !strings.HasPrefix(pos.Filename(), "schemas/") {
				return fmt.Sprintf("%s:%d:%d", pos.Filename(), pos.Line(), pos.Column())
			}
		}
	}
	return ""
}

type sourceDecl struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Protocol    string `json:"protocol"`
	Status      string `json:"status"`
}

type acceptDecl struct {
	Format    string `json:"format"`
	Example   string `json:"example"`
	Pattern   string `json:"pattern"`
	Note      string `json:"note"`
	MaxLength int    `json:"max_length"`
}

type optionDecl struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Values      []string `json:"values"`
	Format      string   `json:"format"`
	Default     any      `json:"default"`
	Description string   `json:"description"`
}

type offerDecl struct {
	Offer          string            `json:"offer"`
	PricePerRecord float64           `json:"price_per_record"`
	MaxInputs      int               `json:"max_inputs"`
	Target         string            `json:"target"`
	Params         map[string]string `json:"params"`
	Request        string            `json:"request"`
	Normalize      string            `json:"normalize"`
	Implements     []string          `json:"implements"`
	Status         string            `json:"status"`
	cacheOfferDecl
	ErrorRows []errorRowDecl `json:"error_rows"`
}

type errorRowDecl struct {
	When  string `json:"when"`
	Means string `json:"means"`
}

type serviceDecl struct {
	Platform    string       `json:"platform"`
	Service     string       `json:"service"`
	Description string       `json:"description"`
	InputKind   string       `json:"input_kind"`
	Extract     bool         `json:"extract"`
	Search      bool         `json:"search"`
	Accepts     []acceptDecl `json:"accepts"`
	Options     []optionDecl `json:"options"`
	LimitScope  string       `json:"limit_scope"`
	PerInput    int          `json:"records_per_input"`
	Record      string       `json:"record"`
	Offers      []offerDecl  `json:"offers"`
	Cache       *Cache       `json:"cache"`
}

type compiler struct {
	v        cue.Value
	files    map[string][]byte // the operator's files, for positions inside programs
	problems []string
}

// errf records a problem, led by the file:line:column of at.
func (c *compiler) errf(at cue.Value, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if p, ok := posOf(at); ok {
		msg = p.String() + ": " + msg
	}
	c.problems = append(c.problems, msg)
}

var placeholderRE = regexp.MustCompile(`\{([a-z_]+_host)\}`)

func (c *compiler) compile() *Registry {
	r := &Registry{
		byKey:      map[string]*Service{},
		byPlatform: map[string][]*Service{},
		sources:    map[string]*Source{},
		hosts:      map[string]Host{},
		value:      c.v,
	}
	if err := c.v.LookupPath(cue.ParsePath("platforms")).Decode(&r.Platforms); err != nil {
		c.errf(c.v, "decoding platforms: %v", err)
	}

	// hosts
	var hosts map[string]struct {
		Canonical string `json:"canonical"`
		Pattern   string `json:"pattern"`
	}
	hv := c.v.LookupPath(cue.ParsePath("hosts"))
	if hv.Exists() {
		if err := hv.Decode(&hosts); err != nil {
			c.errf(hv, "decoding hosts: %v", err)
		}
	}
	for name, h := range hosts {
		if _, err := regexp.Compile(h.Pattern); err != nil {
			c.errf(hv.LookupPath(cue.MakePath(cue.Str(name), cue.Str("pattern"))), "host %s: bad pattern: %v", name, err)
			continue
		}
		r.hosts[name] = Host{Canonical: h.Canonical, Pattern: h.Pattern}
	}

	// sources
	sv := c.v.LookupPath(cue.ParsePath("sources"))
	if it, err := sv.Fields(); err == nil {
		for it.Next() {
			var d sourceDecl
			if err := it.Value().Decode(&d); err != nil {
				c.errf(it.Value(), "decoding source %s: %v", it.Selector(), err)
				continue
			}
			s := &Source{ID: d.ID, Name: d.Name, Description: d.Description, Protocol: d.Protocol, Status: d.Status}
			r.sources[s.ID] = s
			r.Sources = append(r.Sources, s)
		}
	}
	sort.Slice(r.Sources, func(i, j int) bool { return r.Sources[i].ID < r.Sources[j].ID })

	// services
	svcs := c.v.LookupPath(cue.ParsePath("services"))
	seenOffer := map[string]cue.Value{}
	if it, err := svcs.Fields(); err == nil {
		for it.Next() {
			s := c.service(r, it.Selector().Unquoted(), it.Value(), seenOffer)
			if s != nil {
				r.byKey[s.Key] = s
			}
		}
	}
	for _, p := range r.Platforms {
		var list []*Service
		for _, s := range r.byKey {
			if s.Platform == p {
				list = append(list, s)
			}
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
		r.byPlatform[p] = list
		r.Services = append(r.Services, list...)
	}
	if len(c.problems) == 0 {
		c.renderViews(r)
	}
	return r
}

func (c *compiler) service(r *Registry, key string, v cue.Value, seenOffer map[string]cue.Value) *Service {
	var d serviceDecl
	if err := v.Decode(&d); err != nil {
		c.errf(v, "decoding service %s: %v", key, err)
		return nil
	}
	s := &Service{
		Key:           d.Platform + "/" + d.Service,
		Platform:      d.Platform,
		Name:          d.Service,
		Description:   d.Description,
		InputKind:     d.InputKind,
		Extract:       d.Extract,
		Search:        d.Search,
		LimitScope:    d.LimitScope,
		PerInput:      d.PerInput,
		Record:        d.Record,
		Cache:         d.Cache,
		optionsByName: map[string]*Option{},
		pos:           v.Pos().String(),
	}
	if !s.Extract && !s.Search {
		at := v.LookupPath(cue.ParsePath("extract"))
		if !at.Exists() {
			at = v.LookupPath(cue.ParsePath("search"))
		}
		c.errf(at, "service %s: extract: false and search: false: no endpoint reaches it (set extract: true for POST /v1/extract/%s, or search: true for POST /v1/search)", s.Key, s.Key)
	}
	if key != s.Key {
		c.errf(v.LookupPath(cue.ParsePath("platform")), "field platform/service: service declared under %q must be keyed %q", key, s.Key)
	}
	if rec := c.v.LookupPath(cue.ParsePath(d.Record)); !rec.Exists() {
		c.errf(v.LookupPath(cue.ParsePath("record")), "service %s: record definition %s is not declared", s.Key, d.Record)
	} else if _, err := recordSchema(rec); err != nil {
		c.errf(v.LookupPath(cue.ParsePath("record")), "service %s: record definition %s is not a valid schema: %v", s.Key, d.Record, err)
	}

	for i, a := range d.Accepts {
		av := v.LookupPath(cue.MakePath(cue.Str("accepts"), cue.Index(i)))
		pat, ok := c.expandHosts(r, a.Pattern, av.LookupPath(cue.ParsePath("pattern")))
		if !ok {
			continue
		}
		re, err := regexp.Compile("^(?:" + pat + ")$")
		if err != nil {
			c.errf(av.LookupPath(cue.ParsePath("pattern")), "service %s: bad accept pattern: %v", s.Key, err)
			continue
		}
		acc := &Accept{Format: r.canonicalHosts(a.Format), Example: a.Example, Pattern: pat, Note: r.canonicalHosts(a.Note), MaxLength: a.MaxLength, re: re}
		s.Accepts = append(s.Accepts, acc)
		if _, ok := acc.match(a.Example, s.InputKind); !ok {
			c.errf(av.LookupPath(cue.ParsePath("example")), "service %s: example %q does not match its own pattern %s", s.Key, a.Example, pat)
		}
	}

	for i, o := range d.Options {
		ov := v.LookupPath(cue.MakePath(cue.Str("options"), cue.Index(i)))
		opt := &Option{Name: o.Name, Type: o.Type, Values: o.Values, Format: o.Format, Description: o.Description}
		if dv := ov.LookupPath(cue.ParsePath("default")); dv.Exists() {
			opt.Default, opt.HasDefault = o.Default, true
			if _, err := opt.check(o.Default); err != nil {
				c.errf(dv, "service %s: option %s: default %s", s.Key, o.Name, err)
			}
		}
		if _, dup := s.optionsByName[o.Name]; dup {
			c.errf(ov, "service %s: option %s declared twice", s.Key, o.Name)
		}
		s.optionsByName[o.Name] = opt
		s.Options = append(s.Options, opt)
	}

	for i, od := range d.Offers {
		ov := v.LookupPath(cue.MakePath(cue.Str("offers"), cue.Index(i)))
		if o := c.offer(r, s, od, ov, seenOffer); o != nil {
			s.Offers = append(s.Offers, o)
			if o.Live() {
				s.live = append(s.live, o)
			}
		}
	}
	s.CacheGen = cacheGen(c.v.LookupPath(cue.ParsePath(d.Record)), d.Offers)
	return s
}

func (c *compiler) offer(r *Registry, s *Service, d offerDecl, v cue.Value, seen map[string]cue.Value) *Offer {
	key := s.Key + " " + d.Offer
	if prev, dup := seen[key]; dup {
		c.errf(v.LookupPath(cue.ParsePath("offer")), "service %s: offer %s declared twice (first at %s)", s.Key, d.Offer, prev.Pos())
		return nil
	}
	seen[key] = v.LookupPath(cue.ParsePath("offer"))
	srcID, name, _ := strings.Cut(d.Offer, "/")
	src, ok := r.sources[srcID]
	if !ok {
		c.errf(v.LookupPath(cue.ParsePath("offer")), "service %s: offer %s names unknown source %q", s.Key, d.Offer, srcID)
		return nil
	}
	price, err := credits.FromFloat(d.PricePerRecord)
	if err != nil || price <= 0 {
		c.errf(v.LookupPath(cue.ParsePath("price_per_record")), "service %s: offer %s: price_per_record must be above 0 and at least 0.000001", s.Key, d.Offer)
	}
	o := &Offer{
		ID: d.Offer, Source: src, Name: name, Price: price, MaxInputs: d.MaxInputs,
		Target: d.Target, Params: d.Params, Status: d.Status, Service: s,
		Implements: map[string]bool{},
		loc:        c.locator(v, d.Normalize, s.Record),
	}
	for i, opt := range d.Implements {
		if _, ok := s.optionsByName[opt]; !ok {
			c.errf(v.LookupPath(cue.MakePath(cue.Str("implements"), cue.Index(i))), "service %s: offer %s implements undeclared option %q", s.Key, d.Offer, opt)
		}
		o.Implements[opt] = true
	}
	c.cacheOffer(o, d, v)
	if o.Request, err = normalize.Compile(d.Request); err != nil {
		c.programErrf(v.LookupPath(cue.ParsePath("request")), d.Request, err, "service %s: offer %s: request program", s.Key, d.Offer)
	}
	for i, e := range d.ErrorRows {
		p, err := normalize.Compile(e.When)
		if err != nil {
			c.programErrf(v.LookupPath(cue.MakePath(cue.Str("error_rows"), cue.Index(i), cue.Str("when"))), e.When, err, "service %s: offer %s: error_rows[%d].when", s.Key, d.Offer, i)
			continue
		}
		o.ErrorRows = append(o.ErrorRows, ErrorRow{When: p, Means: e.Means})
	}
	if o.Normalize, err = normalize.CompileNormalizer(d.Normalize); err != nil {
		c.programErrf(v.LookupPath(cue.ParsePath("normalize")), d.Normalize, err, "service %s: offer %s: normalize program", s.Key, d.Offer)
	} else if o.Normalize == nil && d.Status != StatusComingSoon {
		// Raw upstream items are never served as records. Point at the
		// empty program when the offer declares one, else at the offer.
		at := v.LookupPath(cue.ParsePath("normalize"))
		if p, ok := posOf(at); !ok || strings.HasPrefix(p.file, "schemas/") {
			at = v.LookupPath(cue.ParsePath("offer"))
		}
		c.errf(at, "service %s: offer %s: normalize is empty: an active offer maps each upstream item to a record", s.Key, d.Offer)
	}
	return o
}

func (c *compiler) expandHosts(r *Registry, pattern string, at cue.Value) (string, bool) {
	ok := true
	out := placeholderRE.ReplaceAllStringFunc(pattern, func(m string) string {
		name := m[1 : len(m)-1]
		h, found := r.hosts[name]
		if !found {
			c.errf(at, "unknown host placeholder %s (declare it in hosts.cue)", m)
			ok = false
			return m
		}
		return "(?:" + h.Pattern + ")"
	})
	return out, ok
}

// canonicalHosts replaces host placeholders in documentation text with the
// canonical host names.
func (r *Registry) canonicalHosts(s string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		if h, ok := r.hosts[m[1:len(m)-1]]; ok {
			return h.Canonical
		}
		return m
	})
}

// Record returns the CUE record definition of s, for validating records.
func (r *Registry) Record(s *Service) cue.Value {
	return r.value.LookupPath(cue.ParsePath(s.Record))
}

// ValidateRecord checks one normalized record (JSON) against the service's
// record definition.
func (r *Registry) ValidateRecord(s *Service, record []byte) error {
	def := r.Record(s)
	rv := def.Context().CompileBytes(record)
	if err := rv.Err(); err != nil {
		return err
	}
	u := def.Unify(rv)
	if err := u.Validate(cue.Concrete(true)); err != nil {
		return fmt.Errorf("%s", strings.TrimSpace(cueerrors.Details(err, nil)))
	}
	return nil
}
