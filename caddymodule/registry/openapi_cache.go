package registry

import "strings"

// cacheDoc adds to the finished document the freshness cache's side of
// the run calls (docs/cache.md): the Cache-Control request header of the
// extract and search POSTs, and the Age header of their answers.
func cacheDoc(doc obj) {
	paths := doc["paths"].(obj)
	hdrs := doc["components"].(obj)["headers"].(obj)
	hdrs["Age"] = obj{"description": "Seconds since the oldest record served was fetched, on answers of services whose records may be " +
		"served from the freshness cache (`0`: all live).", "schema": obj{"type": "integer", "minimum": 0}}
	cc := obj{"name": "Cache-Control", "in": "header", "required": false, "schema": obj{"type": "string"},
		"description": "For services that declare a freshness cache (the catalogue's `cache`): `max-age=<seconds>` accepts records " +
			"up to that age, served from the cache or from the same live work another call started, billed at the offer's " +
			"`cached_price_per_record` and counted in `cached_records`; `no-cache` forces live work. Without it the service's " +
			"`default_max_age` applies. Other services ignore it."}
	for p, item := range paths {
		op, ok := item.(obj)["post"].(obj)
		if !ok || !strings.HasPrefix(p, "/v1/") {
			continue
		}
		params, _ := op["parameters"].([]any)
		op["parameters"] = append(params, cc)
		if h, ok := op["responses"].(obj)["200"].(obj)["headers"].(obj); ok {
			h["Age"] = headerRef("Age")
		}
	}
}
