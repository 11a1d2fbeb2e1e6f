package router

import (
	"fmt"

	"go.uber.org/zap"

	"socialrouter/caddymodule/registry"
)

// OutcomeNoValidRecords is an attempt whose items gave no record on the
// service's declared shape: every item failed its normalizer, or produced a
// record off the record schema, or was dropped by it, or was an error record. It is retryable:
// the walk moves on to the next offer.
const OutcomeNoValidRecords = "no_valid_records"

// keepRecord reports whether rec, produced by o's normalizer, is on its
// service's record schema. A record off it is never served nor billed: it
// is logged with the offer, field and reason, and counted in out as a
// failed item of the attempt, as an upstream error record is.
func (r *Router) keepRecord(o *registry.Offer, rec []byte, out *batchOut) bool {
	v := o.Service.CheckRecord(rec)
	if v == nil {
		return true
	}
	out.invalid++
	if r.cfg.Observer != nil {
		r.cfg.Observer.RecordRefused(o.ID)
	}
	if out.invalidMsg == "" {
		out.invalidMsg = v.Error()
	}
	r.logger.Warn("record off its declared schema dropped",
		zap.String("service", o.Service.Key), zap.String("offer", o.ID),
		zap.String("field", v.Field), zap.String("reason", v.Reason))
	return false
}

// noneSurvived is the message of an attempt none of whose items survived.
func noneSurvived(items, errItems, skipped, invalid, dropped int, skipErr error, invalidMsg string) string {
	msg := fmt.Sprintf("no record survived of %d items", items)
	if errItems > 0 {
		msg += fmt.Sprintf("; %d error records", errItems)
	}
	if skipped > 0 {
		msg += fmt.Sprintf("; %d failed normalize: %v", skipped, skipErr)
	}
	if invalid > 0 {
		msg += fmt.Sprintf("; %d off the record schema: %s", invalid, invalidMsg)
	}
	if dropped > 0 {
		msg += fmt.Sprintf("; %d dropped by the normalizer", dropped)
	}
	return msg
}
