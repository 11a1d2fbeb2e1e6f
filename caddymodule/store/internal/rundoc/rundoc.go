// Package rundoc is the stored form of a run document, shared by the
// stores: S2-compressed JSON behind a marker byte.
//
// An N = 10 run is about 29 KiB of JSON, written on every settle. In badger
// it goes to the value log and is msynced; in PostgreSQL, a JSON column
// parsed on insert and compressed by the server cost ~220 µs of backend CPU
// per 35 KiB document against ~26 µs for the same document compressed by
// the client and stored as bytes (a settle's largest cost in the database).
//
// The codec is S2 (klauspost/compress, already a dependency through
// badger): among S2, zstd (fastest and default levels) and S2's "better"
// mode, measured on 29 KiB documents of real and repeated records
// (badger's BenchmarkRunDocCodec), it costs the least CPU per settle and per
// read (every settle encodes, every GET /v1/extractions/{id} decodes), for a
// ratio of 2.0 against zstd fastest's 2.7 on real records.
//
// A stored value is either a document written before compression (plain
// JSON, so its first byte is '{') or S2 followed by an S2 block. The
// marker cannot begin a JSON document, so runs written before stay
// readable as they are, and a later codec can take another marker byte.
package rundoc

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
)

// S2 is the marker byte of an S2-compressed document.
const S2 byte = 0x01

// Encode returns the stored value of doc: a new slice, so doc (a pooled
// buffer) may be released before the commit.
func Encode(doc []byte) []byte {
	scratch := encodeScratch.Get().(*[]byte)
	need := s2.MaxEncodedLen(len(doc))
	if cap(*scratch) < need {
		*scratch = make([]byte, need)
	}
	enc := s2.Encode((*scratch)[:need], doc)
	out := make([]byte, 1+len(enc))
	out[0] = S2
	copy(out[1:], enc)
	encodeScratch.Put(scratch)
	return out
}

// encodeScratch holds S2's worst-case output buffers, so an encode
// allocates only the compressed size.
var encodeScratch = sync.Pool{New: func() any { return new([]byte) }}

// Append appends the run document stored as v to dst.
func Append(dst, v []byte) ([]byte, error) {
	if len(v) == 0 {
		return dst, errors.New("empty run document")
	}
	switch v[0] {
	case '{':
		return append(dst, v...), nil
	case S2:
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
