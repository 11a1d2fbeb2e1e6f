// Package servicecheck runs the offers' normalizers over upstream payloads
// offline: the examples a service carries beside its declaration (`caddy
// sdr check`), or a payload the operator gives (`caddy sdr try`). It holds
// no state and needs no gateway.
//
// Examples convention: services/examples/<source>/<platform>__<service>.json
// is one upstream payload (a JSON array of items, in the upstream's own
// field names) for the offers of <source> serving <platform>/<service>. An
// offer whose items differ from its source's other offers of the service
// has its own file, <platform>__<service>__<offer name>.json, which wins.
package servicecheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"socialrouter/caddymodule/registry"
)

// ExamplesDir is the examples' directory inside a services directory.
const ExamplesDir = "examples"

// ExampleNames lists the example files of o, relative to the services
// directory, the offer's own first.
func ExampleNames(o *registry.Offer) []string {
	s := o.Service
	base := path.Join(ExamplesDir, o.Source.ID, s.Platform+"__"+s.Name)
	return []string{base + "__" + o.Name + ".json", base + ".json"}
}

// FindExample returns the path (inside fsys) and items of o's example, or
// an error naming the file it expected.
func FindExample(fsys fs.FS, o *registry.Offer) (string, []json.RawMessage, error) {
	names := ExampleNames(o)
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return name, nil, fmt.Errorf("reading example: %v", err)
		}
		items, err := Items(b)
		if err != nil {
			return name, nil, err
		}
		return name, items, nil
	}
	return names[1], nil, fmt.Errorf("no example payload (add %s)", names[1])
}

// Items reads an upstream payload: a JSON array of items, or one item.
func Items(payload []byte) ([]json.RawMessage, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(payload, &items); err == nil {
		if len(items) == 0 {
			return nil, errors.New("the payload is an empty array")
		}
		return items, nil
	}
	var one map[string]json.RawMessage
	if err := json.Unmarshal(payload, &one); err != nil {
		return nil, fmt.Errorf("the payload is neither a JSON array of items nor one item: %v", err)
	}
	return []json.RawMessage{payload}, nil
}
