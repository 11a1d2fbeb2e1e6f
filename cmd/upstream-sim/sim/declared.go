package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/servicecheck"
)

// DeclaredRoutes compiles the services directory fsys (its *.cue files and
// examples/) and routes each live offer's target (actor or dataset id) to
// the offer's example payload. Paths are relative to the returned examples
// FS. A target shared by several offers (one dataset, several discovery
// modes) goes to the first offer's example in catalogue order. An offer
// without an example is an error: `caddy sdr check` refuses it too.
func DeclaredRoutes(fsys fs.FS) (map[string]string, fs.FS, error) {
	reg, err := registry.LoadFS(fsys)
	if err != nil {
		return nil, nil, err
	}
	examples, err := fs.Sub(fsys, servicecheck.ExamplesDir)
	if err != nil {
		return nil, nil, err
	}
	routes := map[string]string{}
	var missing []error
	for _, s := range reg.Services {
		for _, o := range s.LiveOffers() {
			if _, done := routes[o.Target]; done {
				continue
			}
			file, _, err := servicecheck.FindExample(fsys, o)
			if err != nil {
				missing = append(missing, fmt.Errorf("%s offer %s: %v", s.Key, o.ID, err))
				continue
			}
			routes[o.Target] = strings.TrimPrefix(file, servicecheck.ExamplesDir+"/")
		}
	}
	return routes, examples, errors.Join(missing...)
}

// layered reads a file from the first of its file systems that has it: a
// -fixtures directory adds to the examples, and shadows those of the same
// name.
type layered []fs.FS

func (l layered) Open(name string) (fs.File, error) {
	var first error
	for _, f := range l {
		file, err := f.Open(name)
		if err == nil {
			return file, nil
		}
		if first == nil || !errors.Is(err, fs.ErrNotExist) {
			first = err
		}
	}
	if first == nil {
		first = &fs.PathError{Op: "open", Path: path.Clean(name), Err: fs.ErrNotExist}
	}
	return nil, first
}
