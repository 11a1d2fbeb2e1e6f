package badger

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store/internal/settle"
)

// Run documents are stored compressed. An N = 10 run is about 29 KiB of
// JSON, written to the value log and msynced on every settle; compressed it
// is about half that for ten distinct records and a twentieth for repeated
// ones, so each commit writes and syncs fewer pages.
//
// The codec is S2 (klauspost/compress, already a dependency through
// badger): among S2, zstd (fastest and default levels) and S2's "better"
// mode, measured on 29 KiB documents of real and repeated records
// (BenchmarkRunDocCodec), it costs the least CPU per settle and per read
// (every settle encodes, every GET /v1/extractions/{id} decodes), for a
// ratio of 2.0 against zstd fastest's 2.7 on real records.
//
// A stored value is either a document written before compression (plain
// JSON, so its first byte is '{') or docS2 followed by an S2 block. The
// marker cannot begin a JSON document, so runs written before stay
// readable as they are, and a later codec can take another marker byte.
const docS2 byte = 0x01

// encodeRunDoc returns the value stored for a run document: a new slice,
// so doc (a pooled buffer) may be released before the commit.
func encodeRunDoc(doc []byte) []byte {
	scratch := encodeScratch.Get().(*[]byte)
	need := s2.MaxEncodedLen(len(doc))
	if cap(*scratch) < need {
		*scratch = make([]byte, need)
	}
	enc := s2.Encode((*scratch)[:need], doc)
	out := make([]byte, 1+len(enc))
	out[0] = docS2
	copy(out[1:], enc)
	encodeScratch.Put(scratch)
	return out
}

// encodeScratch holds S2's worst-case output buffers, so a settle
// allocates only the compressed size.
var encodeScratch = sync.Pool{New: func() any { return new([]byte) }}

// packedDoc is a settle's run document encoded before it is queued, in the
// form almost every settle stores (the balance pays for every record), so
// the commit leader, which runs the settles of a batch in turn, does not
// compress.
type packedDoc struct {
	full    []byte // the stored value of the full document; nil if none
	records int    // the records it keeps
}

// packRunDoc encodes p's full document (Prepare rendered it).
func packRunDoc(p *settle.Prepared) packedDoc {
	doc, err := p.Doc(len(p.Data), credits.Micros(len(p.Data))*p.S.Price)
	if err != nil {
		return packedDoc{} // the leader renders and reports it
	}
	return packedDoc{full: encodeRunDoc(doc), records: len(p.Data)}
}

// value is the stored value of doc, which keeps records records: the one
// packed beforehand when it is that document, else doc encoded now.
func (pd packedDoc) value(records int, doc []byte) []byte {
	if pd.full != nil && records == pd.records {
		return pd.full
	}
	return encodeRunDoc(doc)
}

// appendRunDoc appends the run document stored as v to dst.
func appendRunDoc(dst, v []byte) ([]byte, error) {
	if len(v) == 0 {
		return dst, errors.New("empty run document")
	}
	switch v[0] {
	case '{':
		return append(dst, v...), nil
	case docS2:
		n, err := s2.DecodedLen(v[1:])
		if err != nil {
			return dst, fmt.Errorf("decoding run document: %v", err)
		}
		if cap(dst)-len(dst) < n {
			grown := make([]byte, len(dst), len(dst)+n)
			copy(grown, dst)
			dst = grown
		}
		out, err := s2.Decode(dst[len(dst):len(dst)+n], v[1:])
		if err != nil {
			return dst, fmt.Errorf("decoding run document: %v", err)
		}
		return dst[:len(dst)+len(out)], nil
	}
	return dst, fmt.Errorf("decoding run document: unknown format 0x%02x", v[0])
}
