package testmode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"socialrouter/caddymodule/normalize"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/servicecheck"
	"socialrouter/caddymodule/sources"
	"socialrouter/internal/upstreamitem"
)

// Clients builds the source clients of the test-mode router over reg: one
// per declared source, each answering its offers' calls from their example
// payloads in fsys (a services directory, as `caddy sdr check` reads it).
// None of them holds a network client: a test call cannot reach an
// upstream. Everything comes from the declarations, so a service added in
// CUE with its examples has test mode with no Go change.
func Clients(reg *registry.Registry, fsys fs.FS) (map[string]sources.Client, error) {
	out := map[string]sources.Client{}
	for _, src := range reg.Sources {
		out[src.ID] = &Client{offers: map[string]*offer{}}
	}
	for _, s := range reg.Services {
		live := s.LiveOffers()
		for i, o := range live {
			c, ok := out[o.Source.ID].(*Client)
			if !ok {
				continue
			}
			sig := signature(o.Target, o.Params)
			if _, done := c.offers[sig]; done {
				continue // a target shared by several offers: the first one's example, as the simulator does
			}
			_, items, err := servicecheck.FindExample(fsys, o)
			if err != nil {
				return nil, fmt.Errorf("test mode: %s offer %s: %v", s.Key, o.ID, err)
			}
			of := &offer{o: o, first: i == 0 && len(live) > 1, single: len(live) == 1}
			for _, it := range items {
				var buf bytes.Buffer
				if err := json.Compact(&buf, it); err != nil {
					return nil, fmt.Errorf("test mode: %s offer %s example: %v", s.Key, o.ID, err)
				}
				if !normalize.IsErrorItem(buf.Bytes()) {
					of.items = append(of.items, buf.Bytes())
				}
			}
			if len(of.items) == 0 {
				return nil, fmt.Errorf("test mode: %s offer %s: the example has no data items", s.Key, o.ID)
			}
			c.offers[sig] = of
		}
	}
	return out, nil
}

// signature names an upstream call's target: the target and its params.
func signature(target string, params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(target)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + params[k])
	}
	return b.String()
}

// offer is what a Client knows of one offer.
type offer struct {
	o     *registry.Offer
	items [][]byte // the example's data items, compacted
	// first: the head of a failover order of several offers (Failover
	// fails it); single: the only offer of its service.
	first, single bool
}

// Client answers one source's calls in test mode (see Clients).
type Client struct {
	offers map[string]*offer // by signature
}

// slowStep is how often a Slow call shows activity while it waits.
const slowStep = 500 * time.Millisecond

// Do answers c from its offer's example: per input of the call's body,
// the offer's records per input (records_per_input, else the whole
// example), repeated in order and capped at the call's per-input and
// total limits; or the outcome of a magic input.
func (cl *Client) Do(ctx context.Context, c sources.Call) (*sources.Result, error) {
	of, ok := cl.offers[signature(c.Target, c.Params)]
	if !ok {
		return nil, &sources.Error{Outcome: sources.OutcomeUpstream4xx, Status: http.StatusNotFound,
			Message: "test mode: no offer of this source calls " + c.Target}
	}
	body, err := json.Marshal(c.Body)
	if err != nil {
		return nil, &sources.Error{Outcome: sources.OutcomeInvalidInput, Message: "test mode: " + err.Error()}
	}
	root := gjson.ParseBytes(body)
	inputs := upstreamitem.ArrayStrings(root)
	word := magicIn(root)
	handle := "test:" + of.o.ID
	fail := func(outcome string, status int, retryAfter time.Duration, msg string) error {
		// A handle marks work as started, so the router does not retry the
		// same offer: the outcome is final for the attempt, at once.
		return &sources.Error{Outcome: outcome, Status: status, RetryAfter: retryAfter, Retryable: true,
			Handles: []string{handle}, Message: "test mode (" + word + "): " + msg}
	}
	switch word {
	case ProviderError:
		return nil, fail(sources.OutcomeUpstream5xx, http.StatusBadGateway, 0, "the upstream answered 502")
	case SoftTimeout:
		return nil, fail(sources.OutcomeSoftTimeout, 0, 0, "the upstream stalled")
	case RateLimited:
		return nil, fail(sources.OutcomeRateLimited, http.StatusTooManyRequests, RetryAfterSeconds*time.Second, "the upstream answered 429")
	case Failover:
		if of.first || of.single {
			return nil, fail(sources.OutcomeUpstream5xx, http.StatusBadGateway, 0, "the first offer's upstream answered 502")
		}
	case Slow:
		if err := wait(ctx, c, SlowSeconds*time.Second); err != nil {
			return nil, err
		}
	}
	if c.Activity != nil {
		c.Activity()
	}
	return &sources.Result{Items: of.answer(inputs, word == Empty, c), Handles: []string{handle}, Status: http.StatusOK}, nil
}

// wait waits d, showing activity every slowStep so the soft timeout does
// not take a slow call for a stalled one; ctx ends it early.
func wait(ctx context.Context, c sources.Call, d time.Duration) error {
	t := time.NewTicker(slowStep)
	defer t.Stop()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if c.Activity != nil {
			c.Activity()
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
	return nil
}

// answer is the items of a call whose body holds inputs: per input, the
// offer's records per input (the service's records_per_input, else the
// whole example, capped by the call's per-input limit), each with the
// input it answers as its "input", so the router matches it; all capped by
// the call's total limit. empty answers nothing.
func (of *offer) answer(inputs []string, empty bool, c sources.Call) []json.RawMessage {
	if empty {
		return []json.RawMessage{}
	}
	if len(inputs) == 0 {
		inputs = []string{""}
	}
	per := of.o.Service.PerInput
	if per <= 0 {
		per = len(of.items)
	}
	if c.PerInput > 0 && c.PerInput < per {
		per = c.PerInput
	}
	field := "url"
	if of.o.Service.InputKind == registry.KindQuery {
		field = "query"
	}
	var out []json.RawMessage
	for i, in := range inputs {
		for j := range per {
			if c.Limit > 0 && len(out) >= c.Limit {
				return out
			}
			out = append(out, withInput(of.items[(i*per+j)%len(of.items)], field, in))
		}
	}
	return out
}

// withInput is a copy of item whose top-level "input" is {field: in}, the
// way a dataset upstream echoes the input a row answers. An item without
// an input (in is "") is copied as it is.
func withInput(item []byte, field, in string) json.RawMessage {
	if in == "" {
		return append(json.RawMessage(nil), item...)
	}
	echo, _ := json.Marshal(map[string]string{field: in})
	return upstreamitem.SetInput(item, echo)
}

// magicIn returns the magic word a string of the body holds, or "": the
// request program may put an input anywhere (a search term is no array
// item), and keeps the word whatever it does to the input's URL (a test
// holds every service's programs to that).
func magicIn(v gjson.Result) string {
	word := ""
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case word != "":
		case v.IsArray() || v.IsObject():
			v.ForEach(func(_, e gjson.Result) bool { walk(e); return word == "" })
		case v.Type == gjson.String:
			word = magicWord(v.Str)
		}
	}
	walk(v)
	return word
}

// Interface guard: a Client is a source client like the network ones.
var _ sources.Client = (*Client)(nil)
