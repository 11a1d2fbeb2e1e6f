package servicecheck

import (
	"context"
	"os"
	"path/filepath"

	"socialrouter/caddymodule/registry"
)

// Load compiles the services directory dir (registry.Load) and runs Check
// over its examples (dir/examples): every live offer's normalizer over its
// example, the robustness mutations included. It is the one loader of the
// gateway (the app's Provision, a registry swap) and of `sdr check`, so a
// reload refuses what `sdr check` refuses. Its error is a *registry.Error
// whose problems each lead with a file:line:column.
func Load(ctx context.Context, dir string) (*registry.Registry, error) {
	reg, err := registry.Load(dir)
	if err != nil {
		return nil, err
	}
	probs := Check(ctx, reg, os.DirFS(dir))
	if len(probs) == 0 {
		return reg, nil
	}
	lines := make([]string, len(probs))
	for i, p := range probs {
		p.File = filepath.Join(dir, p.File)
		lines[i] = p.String()
	}
	return nil, &registry.Error{Problems: lines}
}
