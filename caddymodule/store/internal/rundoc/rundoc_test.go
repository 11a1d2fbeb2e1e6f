package rundoc

import (
	"bytes"
	"testing"
)

func TestCodec(t *testing.T) {
	doc := []byte(`{"id":"ext_1","status":"completed","data":[{"a":1},{"a":1},{"a":1}]}`)
	enc := Encode(doc)
	if enc[0] != S2 || bytes.Equal(enc[1:], doc) {
		t.Fatalf("encoded document %q is not marked S2", enc)
	}
	for _, tc := range []struct {
		name    string
		stored  []byte
		want    []byte
		wantErr bool
	}{
		{"compressed", enc, doc, false},
		{"written before compression", doc, doc, false},
		{"empty", nil, nil, true},
		{"unknown marker", append([]byte{0x7f}, doc...), nil, true},
		{"corrupt block", append([]byte{S2}, 0xff, 0xff, 0xff), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("kept:")
			got, err := Append(bytes.Clone(prefix), tc.stored)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("Append(%q) = %q, want an error", tc.stored, got)
				}
				return
			}
			if err != nil || !bytes.Equal(got, append(bytes.Clone(prefix), tc.want...)) {
				t.Fatalf("Append = %q, %v; want %q after the prefix", got, err, tc.want)
			}
		})
	}
}
