package store

import "context"

// Pinger tells cheaply whether the store answers: the readiness check
// (GET /v1/health/ready) asks it before every verdict.
type Pinger interface {
	Ping(ctx context.Context) error
}
