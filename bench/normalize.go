package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"socialrouter/caddymodule/normalize"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/cmd/upstream-sim/sim"
	"socialrouter/internal/cpuclock"
	"socialrouter/internal/jsonscan"
)

// delNulls matches the recursive null removal that ends the normalizers.
var delNulls = regexp.MustCompile(`\|\s*del\(\s*\.\.\s*\|\s*nulls\s*\)`)

// experiments measures, in process, the changes the profile points at
// against the code as it is: the normalizer on gojq with and without its
// recursive null removal (done in Go instead), the run answer written with
// its records spliced in rather than re-encoded by encoding/json, and a
// stored run served as stored. Each variant must give the same JSON as the
// current code, or it is not measured.
func (rep *report) experiments(ctx context.Context, cfg *config) error {
	w := rep.section("6b")
	item, err := simItem()
	if err != nil {
		return err
	}
	cur, err := registry.Load(cfg.services)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	entries, err := os.ReadDir(cfg.services)
	if err != nil {
		return err
	}
	removed := 0
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".cue" {
			continue
		}
		p := filepath.Join(cfg.services, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		removed += len(delNulls.FindAll(b, -1))
		files[p] = delNulls.ReplaceAll(b, nil)
	}
	fmt.Fprintln(w, "6b. What the profile points at, measured in process: variants of the code as it is, each checked to")
	fmt.Fprintln(w, "    give the same JSON (a variant that differs is not measured); medians of interleaved rounds")
	curP, err := normalizer(cur)
	if err != nil {
		return err
	}
	const input, now = `https://www.linkedin.com/in/rbranson`, "2026-01-01T00:00:00Z"
	// runJQ runs a program on gojq (Program.Run) and encodes its record
	// with every null pruned, as NormalizeItem's output has none.
	runJQ := func(p *normalize.Program) func() ([]byte, error) {
		return func() ([]byte, error) {
			var v any
			if err := json.Unmarshal(item, &v); err != nil {
				return nil, err
			}
			outs, err := p.Run(ctx, v, input, now)
			if err != nil || len(outs) == 0 {
				return nil, err
			}
			return json.Marshal(pruneNulls(outs[0]))
		}
	}
	var want []byte  // the record, which every variant must give (the scan hands it on)
	var batch []byte // the router's buffer of a batch's records, reused here
	// The item's members as the upstream splitter locates them while it
	// checks a body (sources.splitChecked), outside the timed rounds: that
	// check is the one pass the normalizer is held against.
	var members []jsonscan.Member
	{
		s, c, all := jsonscan.Bytes(item), jsonscan.Get(), true
		c.Object(s, 0, func(k, v string) {
			m, ok := jsonscan.MemberAt(s, k, v)
			members, all = append(members, m), all && ok
		})
		jsonscan.Put(c)
		if !all {
			members = nil // a key with an escape: the plan indexes the item itself
		}
	}
	variants := []struct {
		label string
		fn    func() ([]byte, error)
	}{
		{"AppendCheckedItem, as the gateway runs it (the splitter checked the item; the batch's records in one buffer)", func() ([]byte, error) {
			b, _, err := curP.AppendCheckedItem(ctx, batch[:0], item, input, now)
			batch = b
			return b, err
		}},
		{"AppendIndexedItem, as the router runs it since round 21 (the item's members located by the splitter's check)", func() ([]byte, error) {
			b, _, err := curP.AppendIndexedItem(ctx, batch[:0], item, members, input, now)
			batch = b
			return b, err
		}},
		{"the declared jq program on gojq (Program.Run), record encoded", runJQ(curP)},
	}
	if removed > 0 {
		mod, err := registry.LoadFiles(files)
		if err != nil {
			return fmt.Errorf("services without del(.. | nulls): %v", err)
		}
		modP, err := normalizer(mod)
		if err != nil {
			return err
		}
		variants = append(variants, struct {
			label string
			fn    func() ([]byte, error)
		}{"the same on gojq without its del(.. | nulls), nulls pruned in Go", runJQ(modP)})
	}
	if svc, ok := cur.Service("pro_net", "profile.info"); ok {
		// What the router adds to every record before serving it.
		rec, _, err := curP.NormalizeItem(ctx, item, input, now)
		if err != nil {
			return err
		}
		variants = append(variants, struct {
			label string
			fn    func() ([]byte, error)
		}{"CheckRecord of that record (its compiled schema, as the router)", func() ([]byte, error) {
			if v := svc.CheckRecord(rec); v != nil {
				return nil, v
			}
			return rec, nil
		}})
	}
	// One pass over the item: what any reader of all of it costs at the
	// least (issue 38 holds the normalizer to 4 × it).
	variants = append(variants, struct {
		label string
		fn    func() ([]byte, error)
	}{scanLabel, func() ([]byte, error) {
		c := jsonscan.Get()
		defer jsonscan.Put(c)
		if !c.Valid(jsonscan.Bytes(item)) {
			return nil, fmt.Errorf("the item is not valid JSON")
		}
		return want, nil
	}})
	variants = append(variants, struct {
		label string
		fn    func() ([]byte, error)
	}{"reference: plain encoding/json decode + encode of the item", func() ([]byte, error) {
		var v any
		if err := json.Unmarshal(item, &v); err != nil {
			return nil, err
		}
		return json.Marshal(v)
	}})
	want, err = variants[0].fn()
	if err != nil {
		return err
	}
	var fns []func() ([]byte, error)
	var labels []string
	for i, v := range variants {
		got, err := v.fn()
		if i < len(variants)-1 && (err != nil || !sameJSON(got, want)) {
			fmt.Fprintf(w, "      %s: output differs (%v); not measured\n", v.label, err)
			continue
		}
		fns, labels = append(fns, v.fn), append(labels, v.label)
	}
	ns := interleave(ctx, cfg.rounds, 300*time.Millisecond, fns...)
	fmt.Fprintf(w, "    normalizing one pro_net/profile.info item (%d B in, %d B out; %d normalizers end in del(.. | nulls)), µs per item:\n",
		len(item), len(want), removed)
	for i, l := range labels {
		fmt.Fprintf(w, "      %-70s %8.1f   %5.2f × the first\n", l, ns[i]/1000, ns[i]/ns[0])
		if l == scanLabel {
			fig := fmt.Sprintf("%.1f / %.1f µs = %.2f ×", ns[0]/1000, ns[i]/1000, ns[0]/ns[i])
			fmt.Fprintf(w, "      normalizer ÷ one scan of the item = %s   target ≤ 4 ×  %s\n", fig, mark(ns[0] <= 4*ns[i]))
			rep.check("normalizer µs/item ÷ one jsonscan pass over it", fig, "target ≤ 4 ×", ns[0] <= 4*ns[i])
		}
		if strings.HasPrefix(l, "CheckRecord") && len(ns) > i {
			// The record-schema check of every served record (issue 12)
			// beside the normalizer it follows, in the summary too.
			fig := fmt.Sprintf("%.1f / %.1f µs = %.2f ×", ns[i]/1000, ns[0]/1000, ns[i]/ns[0])
			fmt.Fprintf(w, "      schema check µs/record vs normalizer µs/record = %s\n", fig)
			rep.info("schema check µs/record vs normalizer µs/record", fig, "printed beside it (no target)")
		}
	}

	// The run answer: encoding/json re-validates and compacts every
	// json.RawMessage record; the records are compact JSON already.
	var run runs.Run
	var recs []json.RawMessage
	for range 10 {
		recs = append(recs, json.RawMessage(want))
	}
	run = runs.Run{ID: "ext_01kbench", Status: "completed", Platform: "pro_net", Service: "profile.info", URL: input,
		ServedBy: "source_b/pro_net", Data: recs, Pagination: runs.Pagination{Total: 10, Returned: 10},
		CreatedAt: time.Now().UTC(), CompletedAt: time.Now().UTC()}
	marshal := func() ([]byte, error) { return json.Marshal(&run) }
	splice := func() ([]byte, error) { return spliceRun(&run) }
	a, _ := marshal()
	b, err := splice()
	if err != nil || !bytes.Equal(a, b) {
		fmt.Fprintln(w, "    run answer with spliced records: output differs from encoding/json; not measured")
		fmt.Fprintln(w)
		return nil
	}
	ns = interleave(ctx, cfg.rounds, 300*time.Millisecond, marshal, splice)
	fmt.Fprintf(w, "    encoding the answer of a 10-record run (%d B), µs per answer:\n", len(a))
	fmt.Fprintf(w, "      %-70s %8.1f\n", "json.Marshal(run): what the handler and settle did before runs.AppendRun", ns[0]/1000)
	fmt.Fprintf(w, "      %-70s %8.1f   %5.2f × the first\n", "run head encoded, records appended as they are (as they do now)", ns[1]/1000, ns[1]/ns[0])

	// GET /v1/extractions/{id}: the stored document is decoded into a Run
	// and encoded again; it could be written as stored.
	type storedRun struct {
		runs.Run
		AccountID string `json:"account_id"`
		KeyID     string `json:"key_id,omitempty"`
	}
	stored, _ := json.Marshal(storedRun{Run: run, AccountID: benchAccount, KeyID: "key_bench"})
	roundTrip := func() ([]byte, error) {
		var sr storedRun
		if err := json.Unmarshal(stored, &sr); err != nil {
			return nil, err
		}
		return json.Marshal(&sr.Run)
	}
	verbatim := func() ([]byte, error) { return append([]byte(nil), stored...), nil }
	ns = interleave(ctx, cfg.rounds, 300*time.Millisecond, roundTrip, verbatim)
	fmt.Fprintf(w, "    GET /v1/extractions/{id} of that run (%d B stored), µs per answer:\n", len(stored))
	fmt.Fprintf(w, "      %-70s %8.1f\n", "stored document decoded into a Run and encoded again (/records until round 12)", ns[0]/1000)
	fmt.Fprintf(w, "      %-70s %8.1f   %5.2f × the first\n", "stored bytes copied as they are (GET /v1/extractions/{id}, /records now)", ns[1]/1000, ns[1]/ns[0])
	fmt.Fprintln(w)
	return nil
}

// scanLabel names the one-pass yardstick of the normalizer.
const scanLabel = "one pass: jsonscan's strict check of the item (what the splitter runs)"

// sameJSON reports whether a and b are the same JSON value (key order and
// string escaping aside).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}

// normalizer is the normalize program of the measured offer.
func normalizer(reg *registry.Registry) (*normalize.Program, error) {
	svc, ok := reg.Service("pro_net", "profile.info")
	if !ok {
		return nil, fmt.Errorf("no pro_net/profile.info in the registry")
	}
	for _, o := range svc.Offers {
		if o.Target == benchDataset && o.Normalize != nil {
			return o.Normalize, nil
		}
	}
	return nil, fmt.Errorf("no offer of pro_net/profile.info on %s with a normalizer", benchDataset)
}

// simItem is the item the simulator answers for the bench input, taken from
// the simulator itself (in process).
func simItem() ([]byte, error) {
	s := sim.New(sim.Options{})
	req := httptest.NewRequest(http.MethodPost, "/datasets/v3/scrape?dataset_id="+benchDataset+"&format=json&include_errors=true",
		strings.NewReader(`{"input":[{"url":"`+benchInput+`"}]}`))
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	var items []json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &items); err != nil || len(items) == 0 {
		return nil, fmt.Errorf("simulator answer: %d %v: %s", w.Code, err, clip(w.Body.Bytes()))
	}
	return items[0], nil
}

// pruneNulls removes null object members and array elements, recursively:
// what del(.. | nulls) does.
func pruneNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = pruneNulls(e)
		}
	case []any:
		out := x[:0]
		for _, e := range x {
			if e != nil {
				out = append(out, pruneNulls(e))
			}
		}
		return out
	}
	return v
}

// spliceRun renders a run as encoding/json does, but appends the records
// as they are instead of re-validating each.
func spliceRun(run *runs.Run) ([]byte, error) {
	head := *run
	head.Data = nil
	b, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(b, []byte(`"data":null`))
	if i < 0 {
		return nil, fmt.Errorf("no data member")
	}
	n := len(b)
	for _, r := range run.Data {
		n += len(r) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, b[:i]...)
	out = append(out, `"data":[`...)
	for j, r := range run.Data {
		if j > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	out = append(out, ']')
	return append(out, b[i+len(`"data":null`):]...), nil
}

// interleave runs each function for dur of CPU time per round, in turn,
// and returns each one's median ns of CPU per call: the goroutine is locked
// to its thread and timed by the thread's CPU clock (cpuclock.Thread), so the
// moments another process held the core count for neither variant.
func interleave(ctx context.Context, rounds int, dur time.Duration, fns ...func() ([]byte, error)) []float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	per := make([][]float64, len(fns))
	for r := 0; r < rounds && ctx.Err() == nil; r++ {
		for i, fn := range fns {
			n := 0
			start := cpuclock.Thread()
		batches: // the clock is a system call: read between batches of 16 calls
			for cpuclock.Thread()-start < dur && n < 1_000_000 {
				for range 16 {
					if _, err := fn(); err != nil {
						break batches
					}
					n++
				}
			}
			if n > 0 {
				per[i] = append(per[i], float64(cpuclock.Thread()-start)/float64(n))
			}
		}
	}
	out := make([]float64, len(fns))
	for i := range per {
		out[i] = median(per[i])
	}
	return out
}
