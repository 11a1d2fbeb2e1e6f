package normalize

import (
	"bytes"
	"context"
	"testing"
)

// TestAppendCheckedItem: the record is written after the caller's bytes,
// the same as NormalizeCheckedItem's, and a dropped or failed item leaves
// them as they were, on the plan (written in place or built first) and on
// gojq's path alike.
func TestAppendCheckedItem(t *testing.T) {
	ctx := context.Background()
	programs := []string{
		`{v: .a, w: .b} | del(.. | nulls)`,                   // emitted
		`if .a == null then empty else {v: .a, n: null} end`, // emitted, may drop
		`{v: .a, v: .b}`,       // built: a key twice
		`{v: (.a | tojson)}`,   // no plan: gojq
		`{v: (.a | tonumber)}`, // an error for some items
	}
	items := []string{`{}`, `{"a":null}`, `{"a":1,"b":"x"}`, `{"a":"<x> & y"}`, `{"a":"nan"}`, `{"a":[1,{"b":2}]}`, `{"error":"gone"}`}
	for _, src := range programs {
		p, err := CompileNormalizer(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		// One buffer through all items, with room to spare: a record
		// must land after the last one and never move the earlier ones.
		buf := append(make([]byte, 0, 64), "prefix"...)
		var kept [][]byte
		for _, it := range items {
			want, wantOK, wantErr := p.NormalizeCheckedItem(ctx, []byte(it), "in", "now")
			before := string(buf)
			out, ok, err := p.AppendCheckedItem(ctx, buf, []byte(it), "in", "now")
			if ok != wantOK || (err == nil) != (wantErr == nil) {
				t.Fatalf("%s on %s: ok %v err %v, want ok %v err %v", src, it, ok, err, wantOK, wantErr)
			}
			if string(out[:len(before)]) != before {
				t.Fatalf("%s on %s: the bytes before the record changed", src, it)
			}
			if !ok {
				if len(out) != len(before) {
					t.Errorf("%s on %s: %q left after a dropped item", src, it, out[len(before):])
				}
				continue
			}
			if rec := out[len(before):]; !bytes.Equal(rec, want) {
				t.Errorf("%s on %s: appended %s, want %s", src, it, rec, want)
			}
			kept = append(kept, want)
			buf = out
		}
		if want := "prefix" + string(bytes.Join(kept, nil)); string(buf) != want {
			t.Errorf("%s: buffer %s, want %s", src, buf, want)
		}
	}
}
