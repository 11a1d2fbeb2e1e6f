package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/encoding/jsonschema"

	"socialrouter/caddymodule/credits"
)

// views holds the public documents, rendered once per registry.
type views struct {
	catalogue  []byte
	byPlatform map[string][]byte
	entries    map[string][]byte
	records    map[string]map[string]any // record definition → JSON Schema
	openapi    []byte
}

// CatalogueAccept is an accepted input shape as the catalogue shows it.
type CatalogueAccept struct {
	Format  string `json:"format"`
	Example string `json:"example"`
	Pattern string `json:"pattern"`
	Note    string `json:"note,omitempty"`
}

// CatalogueOption is a typed option as the catalogue shows it.
type CatalogueOption struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Values      []string `json:"values,omitempty"`
	Format      string   `json:"format,omitempty"`
	Default     any      `json:"default,omitempty"`
	Description string   `json:"description"`
}

// CatalogueOffer is an offer as the catalogue shows it.
type CatalogueOffer struct {
	Offer          string         `json:"offer"`
	Source         string         `json:"source"`
	PricePerRecord credits.Micros `json:"price_per_record"`
	MaxInputs      int            `json:"max_inputs"`
	// CachedPricePerRecord is set on offers of services with a cache.
	CachedPricePerRecord *credits.Micros `json:"cached_price_per_record,omitempty"`
}

// CatalogueEntry is one callable service (SPEC "Catalogue entry").
type CatalogueEntry struct {
	Platform   string            `json:"platform"`
	Service    string            `json:"service"`
	Endpoint   string            `json:"endpoint"`
	InputKind  string            `json:"input_kind"`
	InputField string            `json:"input_field"`
	Accepts    []CatalogueAccept `json:"accepts"`
	Options    []CatalogueOption `json:"options"`
	Offers     []CatalogueOffer  `json:"offers"`
	Cache      *Cache            `json:"cache,omitempty"`
}

// Entry renders the catalogue entry of s (live offers only).
func (s *Service) Entry() CatalogueEntry {
	e := CatalogueEntry{
		Platform: s.Platform, Service: s.Name,
		Endpoint:  "/v1/extract/" + s.Platform + "/" + s.Name,
		InputKind: s.InputKind, InputField: s.InputField(),
		Accepts: []CatalogueAccept{}, Options: []CatalogueOption{}, Offers: []CatalogueOffer{},
	}
	for _, a := range s.Accepts {
		e.Accepts = append(e.Accepts, CatalogueAccept{Format: a.Format, Example: a.Example, Pattern: a.Pattern, Note: a.Note})
	}
	for _, o := range s.Options {
		e.Options = append(e.Options, CatalogueOption{Name: o.Name, Type: o.Type, Values: o.Values, Format: o.Format, Default: o.Default, Description: o.Description})
	}
	for _, o := range s.LiveOffers() {
		co := CatalogueOffer{Offer: o.ID, Source: o.Source.ID, PricePerRecord: o.Price, MaxInputs: o.MaxInputs}
		if s.Cache != nil {
			co.CachedPricePerRecord = &o.CachedPrice
		}
		e.Offers = append(e.Offers, co)
	}
	e.Cache = s.Cache
	return e
}

// Callable reports whether s has an extract endpoint with at least one live
// offer.
func (s *Service) Callable() bool { return s.Extract && len(s.LiveOffers()) > 0 }

// mustJSON renders a view without HTML escaping (formats such as
// "<slug>" stay readable); views are built from decoded declarations, so an
// error is a programming error.
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("rendering view: %v", err))
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func (c *compiler) renderViews(r *Registry) {
	v := &views{byPlatform: map[string][]byte{}, entries: map[string][]byte{}, records: map[string]map[string]any{}}
	all := []CatalogueEntry{}
	for _, p := range r.Platforms {
		list := []CatalogueEntry{}
		for _, s := range r.byPlatform[p] {
			if !s.Callable() {
				continue
			}
			e := s.Entry()
			v.entries[s.Key] = mustJSON(e)
			list = append(list, e)
		}
		all = append(all, list...)
		v.byPlatform[p] = mustJSON(map[string]any{"data": list})
	}
	v.catalogue = mustJSON(map[string]any{"data": all})
	slugs := map[string]bool{}
	for _, s := range r.SearchTypes() {
		for _, o := range s.LiveOffers() {
			slugs[o.Source.ID+"/"+s.Platform+"/"+s.Name] = true
		}
	}
	r.searchSlugs = sortedKeys(slugs)
	checks := map[string]*checkNode{}
	for _, s := range r.Services {
		if _, done := v.records[s.Record]; !done {
			sch, err := recordSchema(r.value.LookupPath(cue.ParsePath(s.Record)))
			if err != nil {
				c.errf(r.value, "record %s: %v", s.Record, err)
				continue
			}
			v.records[s.Record] = sch
			if checks[s.Record], err = compileRecordCheck(sch); err != nil {
				c.errf(r.value.LookupPath(cue.ParsePath(s.Record)), "record %s: compiling its check: %v", s.Record, err)
			}
		}
		s.check = checks[s.Record]
	}
	r.views = v
	doc, err := r.buildOpenAPI()
	if err != nil {
		c.errf(r.value, "rendering OpenAPI document: %v", err)
		return
	}
	v.openapi = doc
}

// recordSchema turns a CUE record definition into a JSON Schema 2020-12
// object.
func recordSchema(def cue.Value) (map[string]any, error) {
	if err := def.Err(); err != nil {
		return nil, err
	}
	if k := def.IncompleteKind(); k&cue.StructKind == 0 {
		return nil, fmt.Errorf("a record definition must be a struct, not %v", k)
	}
	expr, err := jsonschema.Generate(def, &jsonschema.GenerateConfig{})
	if err != nil {
		return nil, err
	}
	src, err := format.Node(expr)
	if err != nil {
		return nil, err
	}
	sv := def.Context().CompileBytes(src)
	b, err := sv.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	delete(out, "$schema")
	return out, nil
}

// CatalogueJSON is GET /v1/services.
func (r *Registry) CatalogueJSON() []byte { return r.views.catalogue }

// PlatformJSON is GET /v1/services/{platform}; ok is false for an unknown
// platform.
func (r *Registry) PlatformJSON(platform string) ([]byte, bool) {
	b, ok := r.views.byPlatform[platform]
	return b, ok
}

// EntryJSON is GET /v1/services/{platform}/{service} for a callable service.
func (r *Registry) EntryJSON(s *Service) ([]byte, bool) {
	b, ok := r.views.entries[s.Key]
	return b, ok
}

// OpenAPIJSON is GET /v1/openapi.json.
func (r *Registry) OpenAPIJSON() []byte { return r.views.openapi }

// RecordSchema returns the JSON Schema of a service's records.
func (r *Registry) RecordSchema(s *Service) map[string]any { return r.views.records[s.Record] }

// SourceStatusFunc returns the current status of a source (active,
// degraded, down or coming_soon).
type SourceStatusFunc func(id string) string

// ProviderSummary is a Source in list form.
type ProviderSummary struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	Status        string   `json:"status"`
	Platforms     []string `json:"platforms"`
	ServicesCount int      `json:"services_count"`
	OffersCount   int      `json:"offers_count"`
}

// PricingRow groups the types of one price.
type PricingRow struct {
	Type           string         `json:"type"`
	Platforms      []string       `json:"platforms"`
	PricePerRecord credits.Micros `json:"price_per_record"`
}

// ProviderDetail is a Source in detail form.
type ProviderDetail struct {
	ProviderSummary
	SupportedPlatforms   []string     `json:"supported_platforms"`
	SupportedTypes       []string     `json:"supported_types"`
	SupportedSearchTypes []string     `json:"supported_search_types,omitempty"`
	Pricing              []PricingRow `json:"pricing"`
	SearchPricing        []PricingRow `json:"search_pricing,omitempty"`
}

// Provider renders one source in detail form.
func (r *Registry) Provider(src *Source, status SourceStatusFunc) ProviderDetail {
	d := ProviderDetail{ProviderSummary: ProviderSummary{
		ID: src.ID, Name: src.Name, Description: src.Description, Status: status(src.ID), Platforms: []string{},
	}, SupportedPlatforms: []string{}, SupportedTypes: []string{}, Pricing: []PricingRow{}}
	platforms := map[string]bool{}
	services := map[string]bool{}
	types := map[string]bool{}
	searchTypes := map[string]bool{}
	type pk struct {
		typ   string
		price credits.Micros
	}
	pricing := map[pk][]string{}
	searchPricing := map[pk][]string{}
	for _, s := range r.Services {
		for _, o := range s.LiveOffers() {
			if o.Source != src {
				continue
			}
			d.OffersCount++
			services[s.Key] = true
			platforms[s.Platform] = true
			if s.Extract {
				types[s.Name] = true
				k := pk{s.Name, o.Price}
				pricing[k] = appendUnique(pricing[k], s.Platform)
			}
			if s.Search {
				// <platform>/<type>: a type name such as video.search
				// is declared per platform, and the provider slug of
				// POST /v1/search is <source>/<platform>/<type>.
				searchTypes[s.Key] = true
				k := pk{s.Name, o.Price}
				searchPricing[k] = appendUnique(searchPricing[k], s.Platform)
			}
		}
	}
	d.ServicesCount = len(services)
	d.Platforms = r.orderPlatforms(platforms)
	d.SupportedPlatforms = d.Platforms
	if d.Status == StatusComingSoon {
		// platforms lists where a live offer serves; a source an operator
		// marked coming_soon serves none (supported_* still say what it
		// covers).
		d.Platforms = []string{}
	}
	d.SupportedTypes = sortedKeys(types)
	if len(searchTypes) > 0 {
		d.SupportedSearchTypes = sortedKeys(searchTypes)
	}
	render := func(m map[pk][]string) []PricingRow {
		rows := []PricingRow{}
		for k, ps := range m {
			set := map[string]bool{}
			for _, p := range ps {
				set[p] = true
			}
			rows = append(rows, PricingRow{Type: k.typ, Platforms: r.orderPlatforms(set), PricePerRecord: k.price})
		}
		sort.Slice(rows, func(i, j int) bool {
			if rows[i].Type != rows[j].Type {
				return rows[i].Type < rows[j].Type
			}
			return rows[i].PricePerRecord < rows[j].PricePerRecord
		})
		return rows
	}
	d.Pricing = render(pricing)
	if len(searchPricing) > 0 {
		d.SearchPricing = render(searchPricing)
	}
	return d
}

// Providers renders every source in list form.
func (r *Registry) Providers(status SourceStatusFunc) []ProviderSummary {
	out := []ProviderSummary{}
	for _, s := range r.Sources {
		out = append(out, r.Provider(s, status).ProviderSummary)
	}
	return out
}

func (r *Registry) orderPlatforms(set map[string]bool) []string {
	out := []string{}
	for _, p := range r.Platforms {
		if set[p] {
			out = append(out, p)
		}
	}
	return out
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SearchTypes lists the services that are search types, for /v1/search.
func (r *Registry) SearchTypes() []*Service {
	var out []*Service
	for _, s := range r.Services {
		if s.Search {
			out = append(out, s)
		}
	}
	return out
}

// SearchSlugs lists the valid provider slugs <source>/<platform>/<type> of
// POST /v1/search, sorted; computed once at load.
func (r *Registry) SearchSlugs() []string { return r.searchSlugs }

// ServiceNames lists the names of a platform's services (for did-you-mean).
func (r *Registry) ServiceNames(platform string) []string {
	var out []string
	for _, s := range r.byPlatform[platform] {
		if s.Extract {
			out = append(out, s.Name)
		}
	}
	return out
}

// Suggest returns the candidate closest to s by edit distance, or "" when
// nothing is reasonably close.
func Suggest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(s), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(3, len(best)/2) {
		return ""
	}
	return best
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
