package normalize

import "context"

// The engine's internals the external tests (package normalize_test, which
// load the declared normalizers through the registry) hold to gojq.

var (
	ErrPanic = errPanic
	ErrJQ    = errJQ
)

// FastPathPanics is how many plan runs have panicked so far.
func FastPathPanics() uint64 { return fastPathPanics.Load() }

// NormalizeGojq is NormalizeItem on gojq alone.
func (p *Program) NormalizeGojq(ctx context.Context, item []byte, input, now string) ([]byte, bool, error) {
	return p.normalizeGojq(ctx, item, input, now)
}

// RunPlan runs the item on the plan alone, with the cause of a failure.
func (p *Program) RunPlan(item []byte, input, now string) ([]byte, bool, error) {
	return p.plan.run(nil, item, input, now, false)
}

// Emits reports whether the plan writes the record while it evaluates it
// (emit.go) rather than building it first.
func (p *Program) Emits() bool { return p.plan != nil && p.plan.emit != nil }
