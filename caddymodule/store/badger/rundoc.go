package badger

import (
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store/internal/rundoc"
	"socialrouter/caddymodule/store/internal/settle"
)

// Run documents are stored in rundoc's form (S2-compressed), so each
// commit writes and syncs fewer value-log pages.
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
	return packedDoc{full: rundoc.Encode(doc), records: len(p.Data)}
}

// value is the stored value of doc, which keeps records records: the one
// packed beforehand when it is that document, else doc encoded now.
func (pd packedDoc) value(records int, doc []byte) []byte {
	if pd.full != nil && records == pd.records {
		return pd.full
	}
	return rundoc.Encode(doc)
}
