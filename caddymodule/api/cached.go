package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/cache"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// The freshness cache around the router (issue 36): a call's inputs are
// looked up first, the fresh ones served from the cache, the ones another
// call is fetching joined, and only the rest routed; the records are then
// merged in input order with the call's limit, each billed at its price
// (cached records at their offer's cached price).

// cacheNote is what the cache did for a run: which of its records came
// from the cache or joined work, and when the oldest was fetched.
type cacheNote struct {
	cached []bool
	since  time.Time
	// puts is the entries of the call's live work, stored with its run
	// (entries) or, if it settles otherwise, on their own (finish).
	puts *entryPuts
}

// entryPuts is the cache entries a call's live work made, each with the
// flight whose claim drops once it is stored.
type entryPuts struct {
	cache   *cache.Cache
	entries []store.CacheEntry
	flights []*cache.Flight // the published flights still claimed
	done    bool
}

// entries is what the settle stores with the run (store.Settlement.Cache).
func (n *cacheNote) entries() ([]store.CacheEntry, int64) {
	if n == nil || n.puts == nil || n.puts.done || len(n.puts.entries) == 0 {
		return nil, 0
	}
	return n.puts.entries, n.puts.cache.MaxBytes()
}

// stored tells that the settle stored the entries (err: the settle failed,
// or the entries could not be stored with it).
func (n *cacheNote) stored(ctx context.Context, log *zap.Logger, settled bool, err error) {
	if n == nil || n.puts == nil || n.puts.done || len(n.puts.entries) == 0 {
		return
	}
	if !settled {
		return // finish stores them on their own
	}
	if err != nil {
		log.Warn("storing cache entries with the run", zap.Error(err))
	}
	n.puts.unclaim(ctx)
}

// finish stores the entries the settle did not (a refused or failed
// settle, an async run's), then drops the claims: run it once the call
// has settled, before its answer.
func (n *cacheNote) finish(ctx context.Context, log *zap.Logger) {
	if n != nil {
		n.puts.finish(ctx, log)
	}
}

func (p *entryPuts) finish(ctx context.Context, log *zap.Logger) {
	if p == nil || p.done {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, e := range p.entries {
		if err := p.cache.Keep(ctx, e); err != nil {
			log.Warn("storing a cache entry", zap.String("service", e.Service), zap.Error(err))
		}
	}
	p.unclaim(ctx)
}

func (p *entryPuts) unclaim(ctx context.Context) {
	p.done = true
	for _, f := range p.flights {
		f.Unclaim(ctx)
	}
}

// apply sets the run's cached_records, over its first kept records, and
// CachedSince. The settle counts them again over the records it keeps
// (store.Line.Cached), when a short balance keeps fewer.
func (n *cacheNote) apply(run *runs.Run, kept int) {
	if n == nil {
		return
	}
	run.CachedSince = n.since
	run.CachedRecords = 0
	for i := range min(len(n.cached), kept) {
		if n.cached[i] {
			run.CachedRecords++
		}
	}
}

// routeCached runs a prepared call on rtr: through the cache when its
// service may be cached, else straight to the router.
//
// req is by pointer, and the router's Run by value in a function of its
// own: a held call waits in here (docs/perf-log.md, issue 38's in-flight
// round).
func (a *API) routeCached(ctx context.Context, rtr *router.Router, c *prepared, req *router.Request) (*router.Result, *cacheNote, error) {
	cc := a.cacheCall(c, req)
	if test := a.TestRouter != nil && (rtr == a.TestRouter || rtr == a.TestAsyncRouter); cc == nil || test {
		// A test key's call never reads or writes the live cache.
		res, err := routeUncached(ctx, rtr, req)
		return res, nil, err
	}
	cc.rtr = rtr
	res, note, err := cc.run(ctx)
	if note == nil {
		cc.puts.finish(ctx, a.Logger) // no note to carry them: a failed call
	} else {
		note.puts = cc.puts
	}
	return res, note, err
}

// routeUncached is rtr.Run on a copy of *req.
//
//go:noinline
func routeUncached(ctx context.Context, rtr *router.Router, req *router.Request) (*router.Result, error) {
	return rtr.Run(ctx, *req)
}

// cachedCall is one call through the cache. A slot is an input (per-input
// mode) or the whole request (when its records cannot be told apart by
// input).
type cachedCall struct {
	a      *API
	rtr    *router.Router
	cache  *cache.Cache
	svc    *registry.Service
	req    router.Request
	bill   router.Budget
	maxAge time.Duration // 0: no lookups and no joins
	slots  []slot
	// perInput: a slot per input; else one slot for the whole request.
	perInput bool
	attempts []runs.Attempt
	last     *registry.Offer // the last offer that served live
	cheap    map[string]*registry.Offer
	// kept counts the records already told to bill (Keep).
	kept int
	// puts is the entries of live work, stored with the call's run.
	puts *entryPuts
}

// slot is the records of one input (or of the whole request).
type slot struct {
	key     string
	records []json.RawMessage
	offers  []*registry.Offer // each record's offer, as billed
	cached  bool
	at      time.Time
	flight  *cache.Flight
}

// cacheCall returns the call through the cache, or nil when the cache
// has no part in it: no cache, a service not declared cacheable, a later
// search page.
func (a *API) cacheCall(c *prepared, req *router.Request) *cachedCall {
	svc := req.Service
	if a.Cache == nil || svc == nil || svc.Cache == nil || req.Skip > 0 {
		return nil
	}
	bill := req.Budget
	if bill == nil {
		return nil
	}
	maxAge := time.Duration(svc.Cache.DefaultMaxAge) * time.Second
	if c.cc.set {
		maxAge = c.cc.maxAge
		if c.cc.noCache {
			maxAge = 0
		}
	}
	maxAge = min(maxAge, time.Duration(svc.Cache.Keep)*time.Second)
	cc := &cachedCall{a: a, cache: a.Cache, svc: svc, req: *req, bill: bill, maxAge: maxAge, cheap: map[string]*registry.Offer{}}
	cc.perInput = len(req.Inputs) == 1 || attributable(req)
	if cc.perInput {
		cc.slots = make([]slot, len(req.Inputs))
		for i, in := range req.Inputs {
			cc.slots[i].key = cache.InputKey(svc, in, req.Options)
		}
	} else {
		cc.slots = []slot{{key: cache.RequestKey(svc, req.Inputs, req.Options, req.Limit)}}
	}
	return cc
}

// attributable reports whether the records of every offer that may serve
// req can be told apart by input (registry.Offer.Attributable).
func attributable(req *router.Request) bool {
	offers := req.Chain()
	for _, o := range offers {
		if !o.Attributable() {
			return false
		}
	}
	return len(offers) > 0
}

// need is the records of one slot a call can use at most (0: all).
func (cc *cachedCall) need() int {
	if !cc.perInput {
		return 0
	}
	return cc.req.Limit
}

// run serves the call: lookups, joins, live work, merge.
func (cc *cachedCall) run(ctx context.Context) (*router.Result, *cacheNote, error) {
	now := time.Now().UTC()
	var live, follow []int
	for i := range cc.slots {
		s := &cc.slots[i]
		if cc.maxAge > 0 {
			if e, ok := cc.cache.Get(ctx, s.key, now, cc.maxAge); ok && e.Serves(cc.need(), cc.req.Pin) && cc.fill(s, e) {
				cc.cache.Hits.Add(1)
				continue
			}
		}
		if cc.maxAge > 0 {
			s.flight = cc.cache.Lead(ctx, s.key, now)
			if !s.flight.Leader() {
				follow = append(follow, i)
				continue
			}
		}
		cc.cache.Misses.Add(1)
		live = append(live, i)
	}
	if len(live) > 0 {
		res, err := cc.routeSlots(ctx, live)
		if err != nil {
			cc.landAll(ctx)
			return cc.servedDespite(ctx, err)
		}
		if len(live) == len(cc.slots) {
			// The cache served nothing: the router's answer as it is.
			return res, &cacheNote{cached: make([]bool, len(res.Records)), since: cc.slots[0].at}, nil
		}
	}
	var again []int
	for _, i := range follow {
		s := &cc.slots[i]
		if e, ok := s.flight.Wait(ctx); ok && e.Serves(cc.need(), cc.req.Pin) && cc.fill(s, e) {
			cc.cache.Joins.Add(1)
			continue
		}
		s.flight = nil
		cc.cache.Misses.Add(1)
		again = append(again, i)
	}
	if len(again) > 0 {
		if _, err := cc.routeSlots(ctx, again); err != nil {
			return cc.servedDespite(ctx, err)
		}
	}
	res, note := cc.merge()
	if cc.last == nil && len(res.Records) > 0 {
		// Nothing routed: hold the money of the records served.
		if err := cc.hold(ctx, res); err != nil {
			return nil, nil, err
		}
	}
	return res, note, nil
}

// servedDespite answers a call whose live work failed with err: the
// records served from the cache (or joined work) when there are some and
// the failure is the upstreams' (as the router serves the batches it kept
// when a failed batch's inputs found no offer), the attempts saying which
// inputs were not served; else the failure. A failure of money, of the
// store or of the caller stays the answer.
func (cc *cachedCall) servedDespite(ctx context.Context, err error) (*router.Result, *cacheNote, error) {
	var f *router.Failure
	if !errors.As(err, &f) {
		return nil, nil, err
	}
	switch f.Kind {
	case errkind.ProviderError, errkind.UpstreamRateLimited, errkind.UpstreamRejectedInput,
		errkind.RequestTimeout, errkind.RequestSoftTimeout, errkind.ServiceNotAvailable:
	default:
		return nil, nil, err
	}
	served := false
	for i := range cc.slots {
		served = served || len(cc.slots[i].records) > 0
	}
	if !served {
		return nil, nil, err
	}
	cc.attempts = append(cc.attempts, f.Attempts...)
	cc.last = nil // the hold is taken again for what is served
	res, note := cc.merge()
	if err := cc.hold(ctx, res); err != nil {
		return nil, nil, err
	}
	return res, note, nil
}

// hold reserves the money of a call served from the cache alone: its
// records at the dearest of their prices (the settle captures each at its
// own), as many as the balance and the key's limit pay for.
func (cc *cachedCall) hold(ctx context.Context, res *router.Result) error {
	o := *res.Served[0]
	for _, s := range res.Served {
		o.Price = max(o.Price, s.Price)
	}
	n, _, err := cc.bill.Reserve(ctx, &o, len(res.Records), 1)
	if err != nil {
		return err
	}
	if n == 0 {
		return cc.bill.Refusal()
	}
	return nil
}

// fill serves slot s from entry e at the offer's cached price; false when
// the offer is no longer declared (a reload removed it).
func (cc *cachedCall) fill(s *slot, e *cache.Entry) bool {
	o, live := cc.cachedOffer(e.Offer)
	if o == nil {
		return false
	}
	recs := e.Records
	if n := cc.need(); n > 0 && len(recs) > n && cc.req.Scope() == registry.ScopePerInput {
		recs = recs[:n]
	}
	s.records, s.cached, s.at = recs, true, e.At
	s.offers = make([]*registry.Offer, len(recs))
	for i := range s.offers {
		s.offers[i] = o
	}
	cc.cache.AvoidedMicros.Add(int64(len(recs)) * int64(live.Price))
	return true
}

// cachedOffer is offer id of the service at its cached price (one copy
// per call, so a settlement's lines name it once), and the offer itself.
func (cc *cachedCall) cachedOffer(id string) (cached, live *registry.Offer) {
	for _, o := range cc.svc.Offers {
		if o.ID != id {
			continue
		}
		if c, ok := cc.cheap[id]; ok {
			return c, o
		}
		c := *o
		c.Price, c.Cached = o.CachedPrice, true
		cc.cheap[id] = &c
		return &c, o
	}
	return nil, nil
}

// landAll ends the flights this call still leads, with no entry.
func (cc *cachedCall) landAll(ctx context.Context) {
	for i := range cc.slots {
		if f := cc.slots[i].flight; f != nil && f.Leader() {
			f.Land(ctx, nil)
			cc.slots[i].flight = nil
		}
	}
}

// keep tells the call's money the records served so far, so the hold of
// the next attempt covers them too (billing.Call.Keep).
func (cc *cachedCall) keep() {
	n := 0
	for i := range cc.slots {
		for _, o := range cc.slots[i].offers {
			if n >= cc.kept {
				cc.bill.Keep(o, 1)
			}
			n++
		}
	}
	cc.kept = n
}

// routeSlots routes the inputs of slots idx, serves their records and
// stores (and lands) what may be cached.
func (cc *cachedCall) routeSlots(ctx context.Context, idx []int) (*router.Result, error) {
	cc.keep()
	req := cc.req
	if len(idx) != len(cc.slots) {
		// Part of the call is served otherwise: an async run's upstream
		// work is not recorded for resumption, which would redo the
		// whole call's inputs (a restart runs it again, through the
		// cache).
		req.OnHandle = nil
	}
	if cc.perInput {
		req.Inputs = make([]string, len(idx))
		for j, i := range idx {
			req.Inputs[j] = cc.req.Inputs[i]
		}
	}
	res, inputs, err := cc.rtr.RunInputs(ctx, &req)
	if res != nil {
		cc.attempts = append(cc.attempts, res.Attempts...)
	}
	if err != nil {
		return nil, err
	}
	cc.served(ctx, idx, res, inputs)
	return res, nil
}

// served gives the routed records of res to slots idx, and stores (and
// lands) what may be cached. It is routeSlots' work after the wait, in a
// frame of its own: a held call waits in routeSlots, whose frame stays on
// the goroutine's stack (docs/perf-log.md, issue 38's in-flight round).
func (cc *cachedCall) served(ctx context.Context, idx []int, res *router.Result, inputs []int) {
	cc.last = res.Offer
	at := time.Now().UTC()
	attributed := cc.attribute(res, inputs, idx)
	partial := false
	for _, a := range res.Attempts {
		partial = partial || a.Outcome == router.OutcomePartial
	}
	for _, i := range idx {
		s := &cc.slots[i]
		s.at = at
		if attributed && len(s.records) > 0 && (cc.perInput || !partial) {
			// Stored with the call's run, in its commit; its joiners here
			// go on at once, other nodes' once it is stored.
			e := cc.entry(s, res, len(idx), at)
			se, ok, err := cc.cache.Encode(s.key, cc.svc, e)
			if err != nil {
				cc.a.Logger.Warn("storing a cache entry", zap.String("service", cc.svc.Key), zap.Error(err))
				e = nil
			}
			if cc.puts == nil {
				cc.puts = &entryPuts{cache: cc.cache}
			}
			if ok {
				cc.puts.entries = append(cc.puts.entries, se)
			}
			if fl := s.flight; fl != nil {
				s.flight = nil
				fl.Publish(e)
				cc.puts.flights = append(cc.puts.flights, fl)
			}
			continue
		}
		if s.flight != nil {
			s.flight.Land(ctx, nil)
			s.flight = nil
		}
	}
}

// attribute gives each record of res to the slot of its input (inputs:
// the index of each record's input in the round's inputs idx, as the
// router matched them); false when a record cannot be placed (the records
// then go to the first slot, and nothing of this work is cached).
func (cc *cachedCall) attribute(res *router.Result, inputs []int, idx []int) bool {
	ok := !cc.perInput || len(idx) == 1 || len(inputs) == len(res.Records)
	for j, rec := range res.Records {
		o := res.Offer
		if res.Served != nil {
			o = res.Served[res.From[j]]
		}
		k := idx[0]
		if ok && cc.perInput && len(idx) > 1 {
			k = idx[inputs[j]]
		}
		s := &cc.slots[k]
		s.records = append(s.records, rec)
		s.offers = append(s.offers, o)
	}
	return ok
}

// entry is the cache entry of slot s served live by res, in a round of n
// inputs: how many records were asked, and whether they are all there are.
func (cc *cachedCall) entry(s *slot, res *router.Result, n int, at time.Time) *cache.Entry {
	e := &cache.Entry{Offer: s.offers[0].ID, At: at, Window: cc.req.Limit, Records: s.records}
	limit, got := cc.req.Limit, len(s.records)
	switch {
	case !cc.perInput:
		e.Complete = true // the answer to exactly this request (its key has the limit)
	case cc.svc.PerInput > 0 && got >= cc.svc.PerInput:
		e.Complete = true
	case limit <= 0:
		e.Complete = true
	case cc.req.Scope() == registry.ScopePerInput || n == 1:
		e.Complete = got < limit
	default:
		// per_call over several inputs: whole only if nothing was cut.
		e.Complete = len(res.Records) == res.Total && res.Total < limit
	}
	return e
}

// merge builds the call's result: every slot's records in input order,
// the limit applied by scope, each record with its offer.
func (cc *cachedCall) merge() (*router.Result, *cacheNote) {
	per := make([][]json.RawMessage, len(cc.slots))
	tags := make([][]*registry.Offer, len(cc.slots))
	flags := make([][]bool, len(cc.slots))
	note := &cacheNote{}
	for i, s := range cc.slots {
		per[i], tags[i] = s.records, s.offers
		flags[i] = make([]bool, len(s.records))
		for j := range flags[i] {
			flags[i][j] = s.cached
		}
		if len(s.records) > 0 && (note.since.IsZero() || s.at.Before(note.since)) {
			note.since = s.at
		}
	}
	scope := cc.req.Scope()
	limit := cc.req.Limit
	if !cc.perInput {
		limit = 0 // the request's records are its answer, cut already
	}
	records, total, more := router.ApplyLimit(per, limit, 0, scope)
	offers, _, _ := router.ApplyLimit(tags, limit, 0, scope)
	note.cached, _, _ = router.ApplyLimit(flags, limit, 0, scope)
	if note.since.IsZero() {
		note.since = time.Now().UTC()
	}
	res := &router.Result{Records: records, Total: total, More: more, Attempts: cc.attempts, Offer: cc.last}
	idx := map[*registry.Offer]int{}
	res.From = make([]int, len(offers))
	for j, o := range offers {
		k, ok := idx[o]
		if !ok {
			k = len(res.Served)
			idx[o] = k
			res.Served = append(res.Served, o)
		}
		res.From[j] = k
	}
	if res.Offer == nil {
		if len(res.Served) > 0 {
			res.Offer = res.Served[len(res.Served)-1]
		} else if o := cc.firstOffer(); o != nil {
			res.Offer = o
		}
	}
	return res, note
}

// firstOffer is the offer named when no record was served at all.
func (cc *cachedCall) firstOffer() *registry.Offer {
	if cc.req.Pin != nil {
		return cc.req.Pin
	}
	if live := cc.svc.LiveOffers(); len(live) > 0 {
		return live[0]
	}
	return nil
}
