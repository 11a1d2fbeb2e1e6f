// Package passhash is the gateway's one place for password hashes:
// argon2id, run through a bounded pool. Each hash takes tens of
// milliseconds of a core and 19 MiB; without a bound, a flood of sign-in
// or invite posts took every core and gigabytes from the paid API. The
// pool is process-wide (Default), so a config reload, which builds a new
// dashboard while the old one drains, cannot double it.
package passhash

import (
	"context"
	"crypto/rand"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBusy is the answer when no slot frees within the pool's wait: the
// caller answers 503 with Retry-After rather than queue without end.
var ErrBusy = errors.New("password checks are busy")

// Default sizes: one slot per two cores the Go scheduler uses (at least
// one), so a flood of password checks never holds every core and the paid
// API always keeps some (on 2 cores, the bench's 64-address flood had
// /v1's p50 at 85 ms with 1 slot against 133 ms with 2, hashing as many
// passwords); and a wait of one second (a few hashes' time) before giving
// up.
var (
	DefaultSlots = defaultSlots()
	DefaultWait  = time.Second
)

func defaultSlots() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// Pool bounds the hashes in flight. Its size can change while in use
// (Configure): a hash releases the slot set it took its slot from.
type Pool struct {
	slots atomic.Pointer[chan struct{}]
	wait  atomic.Int64 // nanoseconds
	inUse atomic.Int64
}

// New returns a pool of slots (at least 1) hashes, each caller waiting up
// to wait for one.
func New(slots int, wait time.Duration) *Pool {
	p := &Pool{}
	p.Configure(slots, wait)
	return p
}

var defaultPool = New(DefaultSlots, DefaultWait)

// Default is the process-wide pool every password hash goes through.
func Default() *Pool { return defaultPool }

// Configure sets the number of slots (at least 1; 0 keeps it) and the wait
// (0 keeps it). Hashes in flight finish on their old slots.
func (p *Pool) Configure(slots int, wait time.Duration) {
	if slots > 0 {
		c := make(chan struct{}, slots)
		p.slots.Store(&c)
	}
	if wait > 0 {
		p.wait.Store(int64(wait))
	}
}

// Slots returns the pool's size.
func (p *Pool) Slots() int { return cap(*p.slots.Load()) }

// InUse returns the hashes in flight.
func (p *Pool) InUse() int { return int(p.inUse.Load()) }

// Acquire takes a slot, waiting up to the pool's wait; the returned
// function gives it back.
func (p *Pool) Acquire(ctx context.Context) (func(), error) {
	c := *p.slots.Load()
	release := func() { p.inUse.Add(-1); <-c }
	select {
	case c <- struct{}{}:
		p.inUse.Add(1)
		return release, nil
	default:
	}
	t := time.NewTimer(time.Duration(p.wait.Load()))
	defer t.Stop()
	select {
	case c <- struct{}{}:
		p.inUse.Add(1)
		return release, nil
	case <-t.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Hash returns the PHC string of an argon2id hash of pw.
func (p *Pool) Hash(ctx context.Context, pw string) (string, error) {
	release, err := p.Acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	return hash(pw)
}

// Verify reports whether pw matches the PHC argon2id hash.
func (p *Pool) Verify(ctx context.Context, hash, pw string) (bool, error) {
	release, err := p.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	return check(hash, pw), nil
}

var (
	dummyOnce sync.Once
	dummy     string
)

// VerifyNone spends on pw what Verify spends on a real hash, and is never
// a match: signing in with an unknown email checks against it, so the
// answer takes as long as for a known one.
func (p *Pool) VerifyNone(ctx context.Context, pw string) error {
	dummyOnce.Do(func() { dummy, _ = hash(rand.Text()) })
	_, err := p.Verify(ctx, dummy, pw)
	return err
}
