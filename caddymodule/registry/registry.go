// Package registry compiles the CUE declarations under services/ (validated
// against schemas/) into an immutable Registry: platforms, services, input
// matchers, typed option validators and offers with compiled jq programs. It
// also renders the public catalogue, the providers view and the OpenAPI
// document from that same registry, once per registry.
//
// A Registry is never mutated after Load returns, so it is safe for
// concurrent use and is swapped whole on a config reload.
package registry

import (
	"regexp"

	"cuelang.org/go/cue"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/normalize"
)

// Input kinds of a service.
const (
	KindURL   = "url"
	KindQuery = "query"
)

// Limit scopes of a service.
const (
	ScopePerCall  = "per_call"
	ScopePerInput = "per_input"
)

// Offer and source statuses that are declared (degraded and down are
// computed by the router's breakers).
const (
	StatusActive     = "active"
	StatusComingSoon = "coming_soon"
)

// Registry is the compiled, immutable set of declarations.
type Registry struct {
	// Platforms lists the eleven platform identifiers in catalogue order.
	Platforms []string
	// Services in catalogue order (platform order, then declaration key).
	Services []*Service
	// Sources in id order.
	Sources []*Source

	byKey      map[string]*Service // "platform/service"
	byPlatform map[string][]*Service
	sources    map[string]*Source
	hosts      map[string]Host

	// value is the whole compiled CUE package, kept for record schemas.
	value       cue.Value
	views       *views
	searchSlugs []string
}

// Host binds a {name_host} placeholder.
type Host struct {
	Canonical string
	Pattern   string
}

// Source is an upstream that backs offers.
type Source struct {
	ID          string
	Name        string
	Description string
	// Protocol is "actor_run" or "dataset_scrape".
	Protocol string
	// Status is the declared status: "active" or "coming_soon".
	Status string
}

// Service is one (platform, service) endpoint.
type Service struct {
	// Key is "<platform>/<service>".
	Key         string
	Platform    string
	Name        string
	Description string
	// InputKind is KindURL or KindQuery.
	InputKind string
	// Extract: served by POST /v1/extract/{platform}/{service}.
	Extract bool
	// Search: also a search type of POST /v1/search.
	Search     bool
	Accepts    []*Accept
	Options    []*Option
	LimitScope string
	// PerInput is the most records one input yields (records_per_input),
	// 0 when unknown: the records a call's credit hold covers.
	PerInput int
	// Record is the record definition name, e.g. "#CompanyInfo".
	Record string
	// Offers in failover order, coming_soon offers included (see Live).
	Offers []*Offer
	// Cache, if set, lets the service's records be reused (cache.go);
	// CacheGen names the record shape and normalizers they were made with.
	Cache    *Cache
	CacheGen string

	optionsByName map[string]*Option
	live          []*Offer
	pos           string
	// check is the compiled record schema (recordcheck.go).
	check *checkNode
}

// Accept is one accepted input shape with its compiled matcher.
type Accept struct {
	Format  string
	Example string
	// Pattern is the declared pattern with host placeholders expanded.
	Pattern   string
	Note      string
	MaxLength int

	re *regexp.Regexp
}

// Option is one typed, declared option.
type Option struct {
	Name        string
	Type        string
	Values      []string
	Format      string
	Default     any
	HasDefault  bool
	Description string
}

// Offer is one implementation of a service by a source.
type Offer struct {
	// ID is "<source>/<name>".
	ID     string
	Source *Source
	Name   string
	// Price is the price of one record.
	Price     credits.Micros
	MaxInputs int
	// Target is the actor id or dataset id.
	Target string
	// Params are extra query parameters of the upstream call.
	Params map[string]string
	// Request builds the upstream request body from
	// {"inputs": [...], "options": {...}, "limit": n}; nil when not declared.
	Request *normalize.Program
	// Normalize maps one upstream item to zero or one record; nil when not
	// declared.
	Normalize *normalize.Program
	// Implements lists the options this offer honours.
	Implements map[string]bool
	Status     string
	Service    *Service
	// ErrorRows are the declared meanings of its error rows (errorrows.go).
	ErrorRows []ErrorRow
	// CachedPrice is the price of one record served from the cache;
	// CacheInput, if set, is where the offer's upstream items name their
	// input (cache.go).
	CachedPrice credits.Micros
	CacheInput  string
	// Cached marks the copy of an offer at its cached price that bills
	// records served from the cache (UsageID).
	Cached bool

	loc *locator // where its parts are declared (locate.go)
}

// Live reports whether the offer takes part in routing.
func (o *Offer) Live() bool {
	return o.Status != StatusComingSoon && o.Source.Status != StatusComingSoon
}

// Service returns the service declared under "<platform>/<service>".
func (r *Registry) Service(platform, service string) (*Service, bool) {
	s, ok := r.byKey[platform+"/"+service]
	return s, ok
}

// PlatformServices returns the services of one platform (possibly none) and
// whether the platform is one of the eleven.
func (r *Registry) PlatformServices(platform string) ([]*Service, bool) {
	for _, p := range r.Platforms {
		if p == platform {
			return r.byPlatform[platform], true
		}
	}
	return nil, false
}

// Source returns the source with the given id.
func (r *Registry) Source(id string) (*Source, bool) {
	s, ok := r.sources[id]
	return s, ok
}

// LiveOffers returns the offers of s that take part in routing, in failover
// order.
// The slice is computed once at load and shared: callers must not modify it.
func (s *Service) LiveOffers() []*Offer { return s.live }

// Offer returns the offer with the given id among s's offers.
func (s *Service) Offer(id string) (*Offer, bool) {
	for _, o := range s.Offers {
		if o.ID == id {
			return o, true
		}
	}
	return nil, false
}

// Option returns the declared option with the given name.
func (s *Service) Option(name string) (*Option, bool) {
	o, ok := s.optionsByName[name]
	return o, ok
}
