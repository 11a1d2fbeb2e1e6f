package testmode

import (
	"net/url"
	"sort"
	"strconv"
	"strings"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
)

// Magic is a magic input of test mode: an input that forces one outcome,
// so a customer's backend can exercise every path it must handle. It is
// the input itself for a query-kind service, or a URL of an accepted
// format whose handle, slug or id is the word (MagicInput builds one per
// service). A call with a magic input among its inputs takes its outcome.
type Magic struct {
	// Word is the input, or the handle, slug or id of a URL input.
	Word string
	// Fails says the call fails, with the error Kind; else it completes.
	Fails bool
	Kind  errkind.Kind
	// Does says what happens, for the docs table.
	Does string
	// ElseKind, when set, is the failure a completing input gives instead
	// ElseWhen (a deadline shorter than its work).
	ElseKind errkind.Kind
	ElseWhen string
}

// The magic words.
const (
	ProviderError = "sdr-test-provider-error"
	SoftTimeout   = "sdr-test-soft-timeout"
	RateLimited   = "sdr-test-rate-limited"
	Failover      = "sdr-test-failover"
	Empty         = "sdr-test-empty"
	Slow          = "sdr-test-slow"
)

// RetryAfterSeconds is the Retry-After of RateLimited.
const RetryAfterSeconds = 30

// SlowSeconds is how long a Slow call's upstream work takes.
const SlowSeconds = 5

// Magics are the magic inputs, the one table docs/testmode.md shows (a
// test holds the page to it).
var Magics = []Magic{
	{ProviderError, true, errkind.ProviderError, "every offer in the failover order fails (upstream 5xx); the run fails, its `attempts` list each offer", 0, ""},
	{SoftTimeout, true, errkind.RequestSoftTimeout, "every offer stalls past the soft timeout; the run fails", 0, ""},
	{RateLimited, true, errkind.UpstreamRateLimited, "every offer is rate-limited upstream; the answer carries `Retry-After: " + strconv.Itoa(RetryAfterSeconds) + "`", 0, ""},
	{Failover, false, 0, "the first offer of the failover order fails, the next one serves (`served_by` names it, `attempts` shows both); on a one-offer service, or pinned to the first offer with `provider`, the run fails as with `" + ProviderError + "`", 0, ""},
	{Empty, false, 0, "the run completes with no records (`data: []`, nothing charged)", 0, ""},
	{Slow, false, 0, "the upstream work takes " + strconv.Itoa(SlowSeconds) + " seconds (with upstream activity every " + slowStep.String() + "), then the run completes with records: an async run stays `running` meanwhile, for polling, cancel and webhooks. " +
		"Each offer's attempt is held to the deadlines a live one is: at the defaults (`attempt_timeout` 120s, `soft_timeout` 30s) the call completes; " +
		"with `attempt_timeout` under " + strconv.Itoa(SlowSeconds) + "s each offer of the failover order times out in turn (`attempts` show `timeout`) and the call fails after one deadline per offer; " +
		"with `soft_timeout` under " + slowStep.String() + " each offer ends `soft_timeout` (504 `request_soft_timeout`). " +
		"An async run's attempts get `async_deadline` (default 1h) instead, so it completes unless that is under " + strconv.Itoa(SlowSeconds) + "s too",
		errkind.RequestTimeout, "`attempt_timeout` is under " + strconv.Itoa(SlowSeconds) + "s"},
}

// magicWord returns the magic word s holds, or "".
func magicWord(s string) string {
	if !strings.Contains(s, "sdr-test-") {
		return ""
	}
	for _, m := range Magics {
		if strings.Contains(s, m.Word) {
			return m.Word
		}
	}
	return ""
}

// MagicInput is an input of service s that carries word and that s
// accepts: the word itself for a query-kind service, else an accepted
// format's example URL with one path segment (or query value) replaced by
// the word, or prefixed with it when the format constrains the segment
// (a post slug with its activity id), or with the word as its query
// string or fragment when no segment can hold it (a numeric event id). ok is false when no accepted format
// takes it.
func MagicInput(s *registry.Service, word string) (string, bool) { return InputWith(s, word) }

// InputWith is an input of service s that carries word, made as
// MagicInput says.
func InputWith(s *registry.Service, word string) (string, bool) {
	if s.InputKind == registry.KindQuery {
		in, ok := s.MatchInput(word)
		return in, ok
	}
	for _, a := range s.Accepts {
		for _, c := range candidates(a.Example, word) {
			if in, ok := s.MatchInput(c); ok && strings.Contains(in, word) {
				return in, true
			}
		}
	}
	return "", false
}

// candidates are inputs made from example by putting word in place of
// one of its parts, the last path segment first.
func candidates(example, word string) []string {
	out := []string{word}
	u, err := url.Parse(example)
	if err != nil || u.Host == "" {
		return out
	}
	segs := strings.Split(u.Path, "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i] == "" {
			continue
		}
		// A handle's sigil stays (/@handle → /@word).
		lead := segs[i][:len(segs[i])-len(strings.TrimLeft(segs[i], "@~!"))]
		for _, repl := range []string{lead + word, lead + word + "-" + segs[i][len(lead):]} {
			c := *u
			s := append([]string(nil), segs...)
			s[i] = repl
			c.Path = strings.Join(s, "/")
			c.RawPath = ""
			out = append(out, c.String())
		}
	}
	// Formats that leave no room for the word in a segment (a numeric id,
	// an 11-character video id, a 21-character subreddit) mostly take a
	// query string or a fragment after the URL.
	sep := "?"
	if u.RawQuery != "" {
		sep = "&"
	}
	out = append(out, example+sep+word, example+"#"+word)
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := *u
		qq := u.Query()
		qq.Set(k, word)
		c.RawQuery = qq.Encode()
		out = append(out, c.String())
	}
	return out
}
