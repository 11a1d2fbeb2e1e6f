package settle

import (
	"bytes"
	"testing"

	"socialrouter/caddymodule/store/internal/rundoc"
)

// TestPacked checks that a settle stores the document packed before the
// commit only when it keeps every record, and otherwise the document the
// leader rendered.
func TestPacked(t *testing.T) {
	full := []byte(`{"id":"ext_p","data":[{"a":1},{"a":2}]}`)
	part := []byte(`{"id":"ext_p","data":[{"a":1}]}`)
	pk := Packed{full: rundoc.Encode(full), records: 2}
	for _, tc := range []struct {
		name    string
		pk      Packed
		records int
		doc     []byte
	}{
		{"every record: packed", pk, 2, full},
		{"fewer records: encoded now", pk, 1, part},
		{"none packed", Packed{}, 2, full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rundoc.Append(nil, tc.pk.Value(tc.records, tc.doc))
			if err != nil || !bytes.Equal(got, tc.doc) {
				t.Fatalf("stored %q, %v; want %q", got, err, tc.doc)
			}
		})
	}
}
