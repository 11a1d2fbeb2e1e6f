package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"cuelang.org/go/cue"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/normalize"
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
	if d.CacheInput == "" {
		return
	}
	p, err := normalize.Compile(d.CacheInput)
	if err != nil {
		c.programErrf(v.LookupPath(cue.ParsePath("cache_input")), d.CacheInput, err, "service %s: offer %s: cache_input", o.Service.Key, d.Offer)
		return
	}
	o.CacheInput = p
}

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

// InputOf returns the input record answers, by the offer's cache_input
// path; ok is false when the offer declares none or the record does not
// hold a string there.
func (o *Offer) InputOf(ctx context.Context, record json.RawMessage) (string, bool) {
	if o.CacheInput == nil {
		return "", false
	}
	var v any
	if json.Unmarshal(record, &v) != nil {
		return "", false
	}
	out, err := o.CacheInput.Run(ctx, v, "", "")
	if err != nil || len(out) == 0 {
		return "", false
	}
	s, ok := out[0].(string)
	return s, ok && s != ""
}
