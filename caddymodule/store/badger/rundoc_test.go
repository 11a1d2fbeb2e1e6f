package badger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"testing"
	"time"

	bdb "github.com/dgraph-io/badger/v4"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/rundoc"
	"socialrouter/services"
)

// TestRunDocFormats checks that a run settled now (compressed) and the
// same run as written before compression (plain JSON under the run key)
// read back the same: GetRunJSON the same API bytes, GetRun the same run.
func TestRunDocFormats(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := s.CreateAccount(ctx, "acct", credits.Micros(1)<<40, now); err != nil {
		t.Fatal(err)
	}
	recs := fixtureRecords(t, 10)
	run := &runs.Run{
		ID: "ext_formats", Status: "completed", Platform: "pro_net", Service: "profile.info",
		URL: "https://www.linkedin.com/in/rbranson", ServedBy: "source_b/pro_net", Provider: "source_b",
		Data: recs, Pagination: runs.Pagination{Total: len(recs)}, CreatedAt: now, CompletedAt: now,
		AccountID: "acct", KeyID: "key_acct",
	}
	if _, err := s.Settle(ctx, store.Settlement{Run: run, Price: 1725, Offer: "source_b/pro_net", Platform: "pro_net", Now: now}); err != nil {
		t.Fatal(err)
	}
	stored := storedValue(t, s, "acct", "ext_formats")
	if stored[0] != rundoc.S2 {
		t.Fatalf("settled run stored with first byte 0x%02x, want the S2 marker", stored[0])
	}
	plain, err := rundoc.Append(nil, stored)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) >= len(plain)*3/4 {
		t.Errorf("stored %d bytes for a %d-byte document: not compressed", len(stored), len(plain))
	}
	newJSON, newRun := readBack(t, s)
	// The API form: the stored document without its scope members, the
	// records as settled (byte for byte).
	var api map[string]json.RawMessage
	if err := json.Unmarshal(newJSON, &api); err != nil {
		t.Fatalf("GetRunJSON is not JSON: %v", err)
	}
	if _, ok := api["account_id"]; ok || string(api["id"]) != `"ext_formats"` {
		t.Fatalf("GetRunJSON members: id %s, account_id %s", api["id"], api["account_id"])
	}
	for i, r := range recs {
		if !bytes.Contains(newJSON, r) {
			t.Fatalf("GetRunJSON lacks record %d as settled", i)
		}
	}
	if len(newRun.Data) != len(recs) || !bytes.Equal(newRun.Data[3], recs[3]) || newRun.AccountID != "acct" {
		t.Fatalf("GetRun returned %d records, record 3 %s", len(newRun.Data), newRun.Data[3])
	}

	// The same document as a store written before compression holds it,
	// written as a run write is: around the run cache (runcache.go), so
	// that it is read from badger.
	s.runs.beginWrite()
	err = s.db.Update(func(txn *bdb.Txn) error { return txn.Set(runKey("acct", "ext_formats"), plain) })
	s.runs.endWrite([]runRef{{"acct", "ext_formats"}})
	if err != nil {
		t.Fatal(err)
	}
	if v := storedValue(t, s, "acct", "ext_formats"); !bytes.Equal(v, plain) {
		t.Fatal("rewriting the plain document failed")
	}
	oldJSON, oldRun := readBack(t, s)
	if !bytes.Equal(oldJSON, newJSON) {
		t.Fatalf("GetRunJSON of the plain document differs:\n%s\n%s", oldJSON, newJSON)
	}
	if !reflect.DeepEqual(oldRun, newRun) {
		t.Fatalf("GetRun of the plain document differs:\n%+v\n%+v", oldRun, newRun)
	}
}

func readBack(t *testing.T, s *Store) ([]byte, runs.Run) {
	t.Helper()
	ctx := context.Background()
	// A prefix in dst must be kept.
	j, err := s.GetRunJSON(ctx, []byte("x"), "acct", "ext_formats")
	if err != nil || len(j) == 0 || j[0] != 'x' {
		t.Fatalf("GetRunJSON = %.40q, %v", j, err)
	}
	r, err := s.GetRun(ctx, "acct", "ext_formats")
	if err != nil {
		t.Fatal(err)
	}
	return j[1:], r
}

func storedValue(t *testing.T, s *Store, account, id string) []byte {
	t.Helper()
	var v []byte
	err := s.db.View(func(txn *bdb.Txn) (err error) {
		v, err = get(txn, runKey(account, id))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fixtureRecords returns n distinct JSON objects of the simulator's
// upstream fixtures (real profiles, places, posts), compact: text as a
// stored run holds, not padding a codec would squeeze to nothing.
func fixtureRecords(tb testing.TB, n int) []json.RawMessage {
	tb.Helper()
	var out []json.RawMessage
	for _, dir := range []string{"source_b", "source_a"} {
		files, err := fs.Glob(services.FS, path.Join("examples", dir, "*.json"))
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range files {
			b, err := fs.ReadFile(services.FS, f)
			if err != nil {
				tb.Fatal(err)
			}
			var items []json.RawMessage
			if json.Unmarshal(b, &items) != nil {
				continue
			}
			for _, it := range items {
				var c bytes.Buffer
				if json.Compact(&c, it) == nil && c.Len() > 0 && c.Bytes()[0] == '{' {
					out = append(out, c.Bytes())
				}
				if len(out) == n {
					return out
				}
			}
		}
	}
	tb.Fatalf("fixtures hold %d records, want %d", len(out), n)
	return nil
}

// BenchmarkRunDocCodec compares the codecs considered for run documents on
// a 10-record document of distinct fixture records and on one of a record
// repeated ten times (what the bench's simulator answers), reporting the
// stored size; ns/op is one encode plus one decode.
func BenchmarkRunDocCodec(b *testing.B) {
	distinct := fixtureRecords(b, 10)
	repeated := make([]json.RawMessage, 10)
	for i := range repeated {
		repeated[i] = distinct[0]
	}
	zf, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	zd, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	codecs := []struct {
		name string
		enc  func(dst, src []byte) []byte
		dec  func(dst, src []byte) ([]byte, error)
	}{
		{"s2", s2.Encode, s2.Decode},
		{"s2_better", s2.EncodeBetter, s2.Decode},
		{"zstd_fastest", func(dst, src []byte) []byte { return zf.EncodeAll(src, dst[:0]) }, func(dst, src []byte) ([]byte, error) { return dec.DecodeAll(src, dst[:0]) }},
		{"zstd_default", func(dst, src []byte) []byte { return zd.EncodeAll(src, dst[:0]) }, func(dst, src []byte) ([]byte, error) { return dec.DecodeAll(src, dst[:0]) }},
	}
	for _, docs := range []struct {
		name string
		recs []json.RawMessage
	}{{"distinct", distinct}, {"repeated", repeated}} {
		doc, err := json.Marshal(map[string]any{"id": "ext_bench", "status": "completed", "data": docs.recs})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range codecs {
			for _, op := range []string{"encode", "decode"} {
				b.Run(fmt.Sprintf("%s/%s/%s", docs.name, c.name, op), func(b *testing.B) {
					enc := c.enc(make([]byte, s2.MaxEncodedLen(len(doc))), doc)
					if out, err := c.dec(make([]byte, len(doc)), enc); err != nil || !bytes.Equal(out, doc) {
						b.Fatalf("round trip differs: %v", err)
					}
					encBuf, decBuf := make([]byte, s2.MaxEncodedLen(len(doc))), make([]byte, len(doc))
					b.SetBytes(int64(len(doc)))
					for b.Loop() {
						if op == "encode" {
							c.enc(encBuf, doc)
						} else if _, err := c.dec(decBuf, enc); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(len(enc)), "stored-B")
					b.ReportMetric(float64(len(doc))/float64(len(enc)), "ratio")
				})
			}
		}
	}
}
