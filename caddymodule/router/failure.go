package router

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/sources"
)

// Failure is a call that no offer served. It carries everything the caller
// needs to answer with the error envelope and to store the failed run;
// how its Kind is answered (status, code, type) is the caller's table.
type Failure struct {
	// Kind is what went wrong (ProviderError, RequestTimeout, …).
	Kind errkind.Kind
	// Message says what happened and what to do.
	Message string
	// Extra holds fields of the error object beside code, message and
	// type (a money refusal's balance, price_per_record, period…).
	Extra map[string]any
	// RetryAfter is set on 429: the largest upstream Retry-After, else 30s;
	// or the end of the key's credit limit period.
	RetryAfter time.Duration
	// Offer is the last offer tried (served_by of the failed run); nil when
	// none was.
	Offer *registry.Offer
	// Attempts trace the walk.
	Attempts []runs.Attempt

	cause error
}

// Error returns the kind and the message.
func (f *Failure) Error() string { return f.Kind.String() + ": " + f.Message }

// Unwrap returns the cause, if any (the caller's context error when the
// caller went away), so errors.Is(err, context.Canceled) works.
func (f *Failure) Unwrap() error { return f.cause }

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, the form of
// the Retry-After header.
func (f *Failure) RetryAfterSeconds() int {
	return int(math.Ceil(f.RetryAfter.Seconds()))
}

// canceled is the failure of a call whose caller went away (or whose own
// deadline passed) during an attempt.
func (w *walk) canceled(o *registry.Offer, err error) *Failure {
	f := &Failure{Offer: o, Attempts: w.attempts, cause: err}
	if errors.Is(err, context.DeadlineExceeded) {
		f.Kind = errkind.RequestTimeout
		f.Message = fmt.Sprintf("the call's deadline passed while %s was running. Retry with fewer inputs or a lower limit.", o.ID)
		return f
	}
	f.Kind = errkind.ClientClosed
	f.Message = fmt.Sprintf("the caller went away while %s was running; nothing was returned.", o.ID)
	return f
}

// stopped is the failure of a walk its caller stopped before offer o was
// called (Request.Proceed or OnAttempt answered err: the call was
// cancelled, or handed to another worker).
func (w *walk) stopped(o *registry.Offer, trial bool, err error) *Failure {
	w.r.breakers.report(o, neutral, trial) // the offer was not called
	return &Failure{Kind: errkind.ClientClosed, Attempts: w.attempts, cause: err,
		Message: fmt.Sprintf("the call was stopped before %s was called: %v", o.ID, err)}
}

// rejected is the failure of an input the upstream reports invalid: another
// offer would reject it too, so the walk stops.
func (w *walk) rejected(o *registry.Offer, a *attempt) *Failure {
	f := &Failure{Offer: o, Attempts: w.attempts, Kind: errkind.UpstreamRejectedInput}
	if a.rec.Outcome != sources.OutcomeInvalidInput {
		// Not retryable for another reason the source knows of: still final,
		// but not the caller's input to blame.
		f.Kind = errkind.ProviderError
		f.Message = fmt.Sprintf("%s %s, and another offer cannot help: %q. Retry later or contact support.",
			o.ID, describe(a, w.r.cfg), a.upstreamMsg)
		return f
	}
	f.Message = fmt.Sprintf("%s rejected the input: %q. Check the inputs against the service's accepted formats and retry.",
		o.ID, a.upstreamMsg)
	return f
}

// classify is the failure of a walk where every tried offer failed
// retryably (SPEC "Errors"; DESIGN section 4).
func (w *walk) classify() *Failure {
	last := w.tried[len(w.tried)-1]
	f := &Failure{Offer: last.offer, Attempts: w.attempts}
	svc := w.req.Service.Key

	allLimited := true
	var retryAfter time.Duration
	for _, a := range w.tried {
		if a.rec.Outcome != sources.OutcomeRateLimited {
			allLimited = false
			break
		}
		retryAfter = max(retryAfter, a.retryAfter)
	}
	if allLimited {
		f.RetryAfter = retryAfter
		if f.RetryAfter <= 0 {
			f.RetryAfter = defaultRetryAfter
		}
		f.Kind = errkind.UpstreamRateLimited
		if w.pinned {
			f.Message = fmt.Sprintf("the pinned offer %s of %s was rate-limited upstream. Retry after %d s%s",
				last.offer.ID, svc, f.RetryAfterSeconds(), w.unpinAdvice(", or "))
		} else {
			f.Message = fmt.Sprintf("%s of %s %s rate-limited upstream. Retry after %d s.",
				offersPhrase(len(w.tried), w.skipped), svc, plural(len(w.tried), "was", "were"), f.RetryAfterSeconds())
		}
		return f
	}

	advice := "Retry later" + w.pinAdvice(" or ")
	if w.pinned {
		advice = "Retry later" + w.unpinAdvice(", or ")
	}
	switch last.rec.Outcome {
	case sources.OutcomeTimeout:
		f.Kind = errkind.RequestTimeout
		advice = "Retry later with fewer inputs or a lower limit" + w.pinAdvice(", or ")
	case sources.OutcomeSoftTimeout:
		f.Kind = errkind.RequestSoftTimeout
	default:
		f.Kind = errkind.ProviderError
	}
	if w.pinned {
		f.Message = fmt.Sprintf("the pinned offer %s of %s failed: it %s. %s", last.offer.ID, svc, describe(last, w.r.cfg), advice)
	} else {
		f.Message = fmt.Sprintf("%s of %s failed; last: %s %s. %s",
			offersPhrase(len(w.tried), w.skipped), svc, last.offer.ID, describe(last, w.r.cfg), advice)
	}
	return f
}

// pinAdvice is sep + "pin another offer with provider." when the service
// has another offer to pin, else ".".
func (w *walk) pinAdvice(sep string) string {
	if len(w.req.Service.LiveOffers()) < 2 {
		return "."
	}
	return sep + "pin another offer with provider."
}

// unpinAdvice is sep + how to let the router fail over (Request.Unpin)
// when the service has another offer to fail over to, else ".".
func (w *walk) unpinAdvice(sep string) string {
	if len(w.req.Service.LiveOffers()) < 2 {
		return "."
	}
	how := w.req.Unpin
	if how == "" {
		how = "drop provider"
	}
	return sep + how + " to let the router fail over."
}

// offersPhrase counts the offers tried, and those skipped for an open
// breaker: "all 2 offers", "the only offer tried (1 skipped: circuit open)".
func offersPhrase(tried, skipped int) string {
	s := fmt.Sprintf("all %d offers", tried)
	if tried == 1 {
		s = "the only offer tried"
	}
	if skipped > 0 {
		s += fmt.Sprintf(" (%d more skipped: circuit open)", skipped)
	}
	return s
}

// plural picks the singular or plural form for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// describe says what went wrong in one attempt, after the offer id:
// "answered HTTP 503", "stalled with no activity for 30s"…
func describe(a *attempt, cfg Config) string {
	status := ""
	if a.rec.Status != 0 {
		status = fmt.Sprintf(" (HTTP %d)", a.rec.Status)
	}
	switch a.rec.Outcome {
	case sources.OutcomeUpstream5xx, sources.OutcomeUpstream4xx, sources.OutcomeAuth, sources.OutcomePayment:
		if a.rec.Status != 0 {
			return fmt.Sprintf("answered HTTP %d", a.rec.Status)
		}
		return "answered with an error"
	case sources.OutcomeNetwork:
		return "could not be reached"
	case sources.OutcomeMalformed:
		return "answered with malformed JSON" + status
	case sources.OutcomeRateLimited:
		return "was rate-limited upstream" + status
	case sources.OutcomeSnapshot:
		return "reported its snapshot failed"
	case sources.OutcomeRunFailed:
		return "reported its run failed"
	case sources.OutcomeTimeout:
		if a.rec.Status != 0 {
			return "timed out upstream" + status
		}
		return fmt.Sprintf("did not finish within the %s attempt deadline", cfg.AttemptTimeout)
	case sources.OutcomeSoftTimeout:
		return fmt.Sprintf("stalled with no upstream activity for %s", cfg.SoftTimeout)
	case OutcomeErrorRecords:
		return "returned only error records"
	case OutcomeNoClient:
		return "is not configured on this gateway"
	case OutcomeRequestError:
		return "could not build its upstream request"
	case sources.OutcomeInvalidInput:
		return "rejected the input" + status
	}
	return "failed (" + a.rec.Outcome + ")" + status
}

// joinMsg joins two message parts with "; ", skipping empty ones.
func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
