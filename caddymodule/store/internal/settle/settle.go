// Package settle holds what the store implementations share about Settle:
// the validation of a settlement, how many records a balance pays for, and
// the stored (JSON) form of a run. Keeping it in one place is what makes the
// badger and postgres stores charge and render runs identically.
package settle

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// Check rejects a settlement no store could write correctly: no run, a
// missing id or account, a negative price, or ids and usage keys containing
// NUL (the badger store's key separator).
func Check(s store.Settlement) error {
	switch {
	case s.Run == nil:
		return errors.New("settling: no run")
	case !ValidID(s.Run.ID):
		return fmt.Errorf("settling: invalid run id %q", s.Run.ID)
	case !ValidID(s.Run.AccountID):
		return fmt.Errorf("settling run %s: invalid account id %q", s.Run.ID, s.Run.AccountID)
	case strings.ContainsRune(s.Run.KeyID, 0):
		return fmt.Errorf("settling run %s: invalid key id %q", s.Run.ID, s.Run.KeyID)
	case s.Price < 0:
		return fmt.Errorf("settling run %s: negative price %d", s.Run.ID, s.Price)
	case strings.ContainsRune(s.Offer, 0) || strings.ContainsRune(s.Platform, 0):
		return fmt.Errorf("settling run %s: NUL in offer or platform", s.Run.ID)
	case s.Lines != nil && len(s.Lines) != len(s.Run.Data):
		return fmt.Errorf("settling run %s: %d lines for %d records", s.Run.ID, len(s.Lines), len(s.Run.Data))
	}
	for _, l := range s.Lines {
		if l.Price < 0 || strings.ContainsRune(l.Offer, 0) {
			return fmt.Errorf("settling run %s: invalid line %q at %d", s.Run.ID, l.Offer, l.Price)
		}
	}
	return nil
}

// ValidID reports whether id may name an account, key or run: non-empty and
// free of NUL.
func ValidID(id string) bool {
	return id != "" && !strings.ContainsRune(id, 0)
}

// Plan returns how many of n records a balance pays for at price, and their
// cost. A price of zero keeps every record for free; the charge never
// exceeds the balance.
func Plan(balance, price credits.Micros, n int) (records int, charged credits.Micros) {
	if price <= 0 || n == 0 {
		return n, 0
	}
	records = n
	if balance < 0 {
		balance = 0
	}
	if afford := balance / price; afford < credits.Micros(n) {
		records = int(afford)
	}
	return records, credits.Micros(records) * price
}

// Plan returns how many of the run's records, the first ones, the payable
// money pays for, and their cost: Plan of the one price, or, for a run
// of several offers (Lines), each record at its own price.
func (p *Prepared) Plan(payable credits.Micros) (records int, charged credits.Micros) {
	if p.S.Lines == nil {
		return Plan(payable, p.S.Price, len(p.Data))
	}
	payable = max(payable, 0)
	for _, l := range p.S.Lines {
		if charged+l.Price > payable {
			break
		}
		charged += l.Price
		records++
	}
	return records, charged
}

// Usage is what one settle adds to one offer's usage row.
type Usage struct {
	Offer             string
	Requests, Records int64
	Credits           credits.Micros
}

// Usage returns the usage rows a settle keeping records records charged
// charged adds to: the serving offer's (the request, and every record
// for a run of one offer), then, for a run of several offers, each other
// offer that served a kept record, with its records and their cost.
func (p *Prepared) Usage(records int, charged credits.Micros) []Usage {
	if p.S.Lines == nil {
		return []Usage{{Offer: p.S.Offer, Requests: 1, Records: int64(records), Credits: charged}}
	}
	out := []Usage{{Offer: p.S.Offer, Requests: 1}}
	for _, l := range p.S.Lines[:records] {
		i := 0
		for i < len(out) && out[i].Offer != l.Offer {
			i++
		}
		if i == len(out) {
			out = append(out, Usage{Offer: l.Offer})
		}
		out[i].Records++
		out[i].Credits += l.Price
	}
	return out
}

// Payable is what a settle may charge: the balance, and at most the run's
// hold when it has one (a capture never takes more than was reserved).
func Payable(balance, held credits.Micros, hasHold bool) credits.Micros {
	if hasHold && held < balance {
		return held
	}
	return balance
}

// Now returns the settle time in UTC, the current time when s.Now is zero.
func Now(s store.Settlement) time.Time {
	if s.Now.IsZero() {
		return time.Now().UTC()
	}
	return s.Now.UTC()
}

// storedRun is a run as the stores keep it: the API form plus the scope
// fields the API never renders.
type storedRun struct {
	runs.Run
	AccountID string `json:"account_id"`
	KeyID     string `json:"key_id,omitempty"`
}

// Prepared is a settlement made ready before any lock is taken: its run
// rendered once for the common case where the balance pays for every
// record, so the locked part of Settle usually does no encoding.
type Prepared struct {
	S    store.Settlement
	Data []json.RawMessage // the run's records before truncation
	Now  time.Time
	// fullCharge is the cost of every record.
	fullCharge credits.Micros
	full       []byte
	buf        *[]byte // full's pooled buffer, until Release
}

// A run document is rendered into a runs.DocBufs buffer: tens of KB, dead
// once its transaction has committed, unless it is handed to the caller as
// its answer (store.Settlement.Answer).

// Release hands the rendered document's buffer back for reuse. Call it
// once the transaction that wrote the document has committed (both stores
// copy a value by then) and Doc is not called again.
func (p *Prepared) Release() {
	runs.DocBufs.Put(p.buf)
	p.buf, p.full = nil, nil
}

// Prepare checks s and renders its run with every record kept.
func Prepare(s store.Settlement) (*Prepared, error) {
	if err := Check(s); err != nil {
		return nil, err
	}
	p := &Prepared{S: s, Data: s.Run.Data, Now: Now(s)}
	n := len(p.Data)
	if s.Price > 0 && credits.Micros(n) > math.MaxInt64/s.Price {
		return nil, fmt.Errorf("settling run %s: charge overflows", s.Run.ID)
	}
	for _, l := range s.Lines {
		if p.fullCharge > math.MaxInt64-l.Price {
			return nil, fmt.Errorf("settling run %s: charge overflows", s.Run.ID)
		}
		p.fullCharge += l.Price
	}
	if s.Lines == nil {
		p.fullCharge = credits.Micros(n) * s.Price
	}
	buf := runs.DocBufs.Get(docSize(p.Data))
	full, err := p.render((*buf)[:0], n, p.fullCharge)
	if err != nil {
		return nil, err
	}
	*buf = full
	p.full, p.buf = full, buf
	return p, nil
}

// docSize is about what a run document of records takes: the records and
// a header, so that runs.DocBufs hands out a buffer of the document's size.
func docSize(records []json.RawMessage) int {
	n := 1 << 10
	for _, r := range records {
		n += len(r) + 1
	}
	return n
}

// Full returns what a settle paid in full keeps and charges: every record,
// at the run's full cost. Plan gives the same whenever the payable money
// covers that cost.
func (p *Prepared) Full() (records int, charged credits.Micros) {
	return len(p.Data), p.fullCharge
}

// Doc returns the stored form of the run keeping records records charged
// charged in total.
func (p *Prepared) Doc(records int, charged credits.Micros) ([]byte, error) {
	if records == len(p.Data) && p.full != nil {
		return p.full, nil
	}
	return p.render(nil, records, charged)
}

func (p *Prepared) render(dst []byte, records int, charged credits.Micros) ([]byte, error) {
	r := *p.S.Run
	r.Data = nil
	r.CreditsUsed = charged
	r.Pagination.Returned = records
	r.CachedRecords = p.cachedAmong(records)
	if b, ok := runs.AppendRun(dst, &r, kept(p.Data, records), true, r.AccountID, r.KeyID); ok {
		return b, nil // the bytes of AppendJSON below, without reflection
	}
	b, err := runs.AppendJSON(dst, storedRun{Run: r, AccountID: r.AccountID, KeyID: r.KeyID}, kept(p.Data, records))
	if err != nil {
		return nil, fmt.Errorf("encoding run %s: %v", r.ID, err)
	}
	return b, nil
}

// Apply records the outcome on the caller's run, once the transaction has
// committed: Data truncated (never null), CreditsUsed and Returned set;
// and, when the settlement asks for it (Answer), hands the caller the
// stored document's API form.
func (p *Prepared) Apply(records int, charged credits.Micros) {
	p.S.Run.Data = kept(p.Data, records)
	p.S.Run.CreditsUsed = charged
	p.S.Run.Pagination.Returned = records
	p.S.Run.CachedRecords = p.cachedAmong(records)
	if p.S.Answer != nil {
		p.answer(records, charged)
	}
}

// answer sets *p.S.Answer to the API form of the document stored for
// records records charged charged: the rendered buffer itself when that
// is the full document (the common case: it is the caller's from now on,
// and Release no longer recycles it), else a new rendering (a balance
// that paid for fewer records). The store copied or compressed the
// document before its commit, so cutting it in place is safe.
func (p *Prepared) answer(records int, charged credits.Micros) {
	var buf *[]byte
	if records == len(p.Data) && p.full != nil {
		buf, p.buf, p.full = p.buf, nil, nil
	} else {
		buf = runs.DocBufs.Get(docSize(p.Data[:records]))
		doc, err := p.render((*buf)[:0], records, charged)
		if err != nil {
			runs.DocBufs.Put(buf)
			return
		}
		*buf = doc
	}
	api, ok := cutScope(*buf)
	if !ok {
		runs.DocBufs.Put(buf)
		return
	}
	*buf = api
	*p.S.Answer = *buf
}

// cachedAmong is the run's cached_records once its first records records
// are kept: the kept lines served from the cache (store.Line.Cached), or,
// without lines, as many of the run's as are kept.
func (p *Prepared) cachedAmong(records int) int {
	if p.S.Lines == nil {
		return min(p.S.Run.CachedRecords, records)
	}
	n := 0
	for _, l := range p.S.Lines[:records] {
		if l.Cached {
			n++
		}
	}
	return n
}

func kept(data []json.RawMessage, records int) []json.RawMessage {
	if records == 0 || data == nil {
		return []json.RawMessage{}
	}
	return data[:records:records]
}

// DecodeRun reads a stored run back, scope fields included.
func DecodeRun(b []byte) (runs.Run, error) {
	// A document without "livemode" was stored before test mode existed,
	// so it is a live run; every later one carries the member.
	sr := storedRun{Run: runs.Run{Livemode: true}}
	if err := json.Unmarshal(b, &sr); err != nil {
		return runs.Run{}, fmt.Errorf("decoding run: %v", err)
	}
	r := sr.Run
	r.AccountID, r.KeyID = sr.AccountID, sr.KeyID
	if r.Data == nil {
		r.Data = []json.RawMessage{}
	}
	return r, nil
}

// Time normalizes a stored timestamp: UTC at microsecond precision, the
// precision of PostgreSQL, so both stores return the same instants.
func Time(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}
