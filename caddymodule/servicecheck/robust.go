package servicecheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"socialrouter/caddymodule/registry"
	"socialrouter/internal/jsonmutate"
)

// robustness runs o's normalizer over items with no data (emptyItems),
// which must give no record, and over the type mutations of every data item
// (jsonmutate: each nested value replaced, one at a time, by null, a
// string, a number, an object, an array and a boolean), as upstreams do
// send a field of another type now and then: no mutation may make the
// normalizer fail, and a record it makes must be on the record schema
// (checked as the gateway checks it at run time). It reports one problem
// per record field (or per failure) with an example mutation.
//
// An offer's result depends only on its program, its record schema, the
// items and the input: a result already computed (an earlier reload of
// the same declarations) is reused, so a reload pays only for what changed.
func robustness(ctx context.Context, reg *registry.Registry, o *registry.Offer, items []json.RawMessage, input string) []itemProblem {
	key := robustKey(reg, o, items, input)
	found, ok := robustCache.Load(key)
	if !ok {
		fs, ok := readCached(key)
		if !ok {
			fs = robustFindings(ctx, o, items, input)
			if ctx.Err() == nil {
				writeCached(key, fs)
			}
		}
		if ctx.Err() == nil {
			robustCache.Store(key, fs)
		}
		found = fs
	}
	// Positions are not cached: the same program may sit elsewhere now.
	var out []itemProblem
	for _, f := range found.([]robustFinding) {
		at := o.NormalizeAt()
		switch {
		case f.field != "":
			at = o.FieldAt(f.field)
		case f.word != "":
			at = o.WordAt(f.word)
		}
		out = append(out, itemProblem{at: at, msg: f.msg, info: f.info})
	}
	return out
}

// robustFinding is one robustness problem: field is the record field
// off the schema, "" for a normalizer failure.
type robustFinding struct {
	field, word, msg string
	info             bool // a note: the record vanished, nothing wrong was made
}

// emptyItems carry no data: a normalizer must neither fail on one nor make
// a record of it (a record of just source and extracted_at would be billed
// for nothing).
var emptyItems = []string{`null`, `1`, `"text"`, `[]`, `{}`}

func robustFindings(ctx context.Context, o *registry.Offer, items []json.RawMessage, input string) []robustFinding {
	var out []robustFinding
	for _, item := range emptyItems {
		rec, ok, err := o.Normalize.NormalizeItem(ctx, []byte(item), input, exampleNow)
		switch {
		case err != nil:
			out = append(out, robustFinding{msg: fmt.Sprintf("robustness: the item %s (no data): normalize: %v (drop what is not an object: if type != \"object\" then empty else … end)", item, err)})
		case ok:
			out = append(out, robustFinding{msg: fmt.Sprintf("robustness: the item %s (no data) gave the record %s: drop an item without the fields that identify it (if .id == null then empty else … end)", item, rec)})
		}
	}
	seen := map[string]bool{} // fields (or "error") already reported
	records := map[string]bool{}
	// What the items themselves break is reported by the example check:
	// a mutation is reported only for what it breaks anew.
	for _, item := range items {
		rec, ok, err := o.Normalize.NormalizeItem(ctx, item, input, exampleNow)
		switch {
		case err != nil:
			seen["error"] = true
		case ok:
			if vio := o.Service.CheckRecord(rec); vio != nil {
				seen[vio.Field] = true
			}
		}
	}
	bound := boundPaths(o)
	drops := newDropper(o) // one per run: its compiled variants go with it
	for i, item := range items {
		var v any
		if json.Unmarshal(item, &v) != nil {
			continue
		}
		for _, repl := range jsonmutate.OddValues {
			jsonmutate.PathsWith(v, repl, bound, func(path string, m any) {
				if ctx.Err() != nil {
					return
				}
				b, _ := json.Marshal(m)
				rec, ok, err := o.Normalize.NormalizeItem(ctx, b, input, exampleNow)
				what := fmt.Sprintf("item %d with %s = %s", i, path, shortJSON(repl))
				switch {
				case err != nil:
					if !seen["error"] {
						seen["error"] = true
						out = append(out, robustFinding{msg: fmt.Sprintf("robustness: %s: normalize: %v", what, err)})
					}
				case !ok && !seen["drop "+path] && hasData(b):
					// A guard (if … then empty, select) drops on purpose;
					// an `as` source or an object value that yields
					// nothing makes the whole record vanish: a note (a
					// record lost, nothing wrong served or billed).
					if word, why, accidental := drops.reason(ctx, b, input, exampleNow); accidental {
						seen["drop "+path] = true
						out = append(out, robustFinding{word: word, info: true, msg: fmt.Sprintf("robustness: %s: the record vanished, %s (a record lost, never billed: guard the field, e.g. ((.a | objects) // {}) as $a, or (.a?.b? // null))", what, why)})
					}
				case ok && !records[string(rec)]:
					records[string(rec)] = true
					if vio := o.Service.CheckRecord(rec); vio != nil && !seen[vio.Field] {
						seen[vio.Field] = true
						out = append(out, robustFinding{field: vio.Field, msg: fmt.Sprintf("robustness: %s: record off %s: %v", what, o.Service.Record, vio)})
					}
				}
			})
		}
	}
	return out
}

// robustCache holds robustness results by robustKey for the life of the
// process (a few bytes per offer; declarations change rarely).
var robustCache sync.Map

// cacheDir keeps robustness results across processes (a gateway's start,
// sdr check), as Go's build cache does, in the user's cache directory:
// a cold start of the declared services costs seconds of mutations, a
// cached one a few file reads. "" (no cache directory) computes every time.
var cacheDir = func() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "socialrouter", "robustness")
}()

func cachePath(key [sha256.Size]byte) string {
	if cacheDir == "" {
		return ""
	}
	return filepath.Join(cacheDir, hex.EncodeToString(key[:])+".json")
}

func readCached(key [sha256.Size]byte) ([]robustFinding, bool) {
	p := cachePath(key)
	if p == "" {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	var out []cachedFinding
	if json.Unmarshal(b, &out) != nil {
		return nil, false
	}
	fs := make([]robustFinding, len(out))
	for i, c := range out {
		fs[i] = robustFinding{c.Field, c.Word, c.Msg, c.Info}
	}
	return fs, true
}

// writeCached stores fs under key; a cache that cannot be written is no
// error (the result is computed again next time).
func writeCached(key [sha256.Size]byte, fs []robustFinding) {
	p := cachePath(key)
	if p == "" || os.MkdirAll(filepath.Dir(p), 0o755) != nil {
		return
	}
	out := make([]cachedFinding, len(fs))
	for i, f := range fs {
		out[i] = cachedFinding{f.field, f.word, f.msg, f.info}
	}
	b, _ := json.Marshal(out)
	tmp := p + ".tmp" + strconv.Itoa(os.Getpid())
	if os.WriteFile(tmp, b, 0o644) == nil {
		_ = os.Rename(tmp, p) // atomic: a concurrent reader sees all or nothing
	}
}

type cachedFinding struct {
	Field string `json:"field"`
	Word  string `json:"word,omitempty"`
	Msg   string `json:"msg"`
	Info  bool   `json:"info,omitempty"`
}

func robustKey(reg *registry.Registry, o *registry.Offer, items []json.RawMessage, input string) [sha256.Size]byte {
	h := sha256.New()
	schema, _ := json.Marshal(reg.RecordSchema(o.Service))
	fmt.Fprintf(h, "robustness v5\x00%d\x00%s\x00%d\x00%s\x00%d\x00%s\x00", len(o.Normalize.Source), o.Normalize.Source, len(schema), schema, len(input), input)
	for _, it := range items {
		fmt.Fprintf(h, "%d\x00", len(it))
		h.Write(it)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

func shortJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
