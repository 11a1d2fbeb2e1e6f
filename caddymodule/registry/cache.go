package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"

	"cuelang.org/go/cue"

	"socialrouter/caddymodule/credits"
)

// Cache is a service's freshness-cache declaration (schemas #Cache): its
// records may be served again, for Keep seconds after they were fetched,
// to callers who accept their age; DefaultMaxAge is the age a call
// without a Cache-Control header accepts.
type Cache struct {
	Keep          int `json:"keep"`
	DefaultMaxAge int `json:"default_max_age"`
}

// cacheOfferDecl is the part of an offer declaration about the cache.
type cacheOfferDecl struct {
	CachedPrice *float64 `json:"cached_price_per_record"`
	CacheInput  string   `json:"cache_input"`
}

// cacheOffer sets o's cached price (its price unless declared) and
// compiles its cache_input path.
func (c *compiler) cacheOffer(o *Offer, d offerDecl, v cue.Value) {
	o.CachedPrice = o.Price
	if d.CachedPrice != nil {
		p, err := credits.FromFloat(*d.CachedPrice)
		if err != nil || p > o.Price {
			c.errf(v.LookupPath(cue.ParsePath("cached_price_per_record")), "service %s: offer %s: cached_price_per_record must be at most price_per_record", o.Service.Key, d.Offer)
		}
		o.CachedPrice = p
	}
	if d.CacheInput != "" && !cacheInputRE.MatchString(d.CacheInput) {
		c.errf(v.LookupPath(cue.ParsePath("cache_input")), "service %s: offer %s: cache_input %q must be .input.<field> or .<field>: the fields the router matches an item's input by", o.Service.Key, d.Offer, d.CacheInput)
	}
	o.CacheInput = d.CacheInput
}

// cacheInputRE is the paths of an upstream item the router reads an
// item's input from (router/match.go): a field of its `input` object, or
// a top-level field.
var cacheInputRE = regexp.MustCompile(`^\.(input\.)?[A-Za-z_][A-Za-z0-9_]*$`)

// CachedSuffix ends the usage key (and the metrics label) of records an
// offer served from the cache: "<offer>#cached".
const CachedSuffix = "#cached"

// UsageID is the key o's records are counted under in usage and metrics:
// its id, with CachedSuffix for its copy at the cached price.
func (o *Offer) UsageID() string {
	if o.Cached {
		return o.ID + CachedSuffix
	}
	return o.ID
}

// Attributable reports whether the records of o can be told apart by
// input: its items name their input (cache_input), or it takes one input
// per upstream call.
func (o *Offer) Attributable() bool { return o.CacheInput != "" || o.MaxInputs == 1 }

// cacheGen names what a service's cached records depend on: its record
// definition and every offer's normalizer and cache_input. A reload that
// changes any of them changes the name, so records of the old shape are
// never served again (the cache keys entries by it).
func cacheGen(record cue.Value, offers []offerDecl) string {
	h := sha256.New()
	fmt.Fprintf(h, "%v\x00", record)
	for _, o := range offers {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", o.Offer, o.Normalize, o.CacheInput)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
