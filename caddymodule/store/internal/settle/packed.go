package settle

import (
	"socialrouter/caddymodule/store/internal/rundoc"
)

// Packed is a settle's run document in rundoc's stored form, encoded
// before the settle is queued, in the form almost every settle stores (the
// balance pays for every record): a store's commit leader, which runs the
// settles of a batch in turn, then does not compress.
type Packed struct {
	full    []byte // the stored value of the full document; nil if none
	records int    // the records it keeps
}

// Pack encodes p's full document (Prepare rendered it).
func Pack(p *Prepared) Packed {
	doc, err := p.Doc(len(p.Data), p.fullCharge)
	if err != nil {
		return Packed{} // the leader renders and reports it
	}
	return Packed{full: rundoc.Encode(doc), records: len(p.Data)}
}

// Value is the stored value of doc, which keeps records records: the one
// packed beforehand when it is that document, else doc encoded now.
func (pk Packed) Value(records int, doc []byte) []byte {
	if pk.full != nil && records == pk.records {
		return pk.full
	}
	return rundoc.Encode(doc)
}
