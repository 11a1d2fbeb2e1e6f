package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipelineTx runs a transaction in two round trips instead of one per
// statement: BEGIN and what reads queues (the row locks and the reads the
// writes depend on) in one pipeline, then what writes queues from what
// those reads returned, and COMMIT, in a second one. A settle group took
// five round trips before (BEGIN, lock, holds, writes, COMMIT), each a
// wake-up of both processes on two shared cores.
//
// Every check that must stop the commit has to fail in the server (a
// constraint, an error raised by a statement): once the second pipeline is
// sent, a statement's error makes PostgreSQL skip the rest of it, COMMIT
// included, but a Go callback's error comes too late to. reads may fail
// in Go (its batch ends with no COMMIT), and so may writes before it
// queues anything.
//
// A transaction aborted for a deadlock or a serialization failure runs
// again, reads and writes included. ambiguous is as in settleTx: the
// second pipeline broke without an answer from the server, which may have
// committed.
func (s *Store) pipelineTx(ctx context.Context, reads func(b *pgx.Batch), writes func(b *pgx.Batch) error) (ambiguous bool, err error) {
	for attempt := 0; ; attempt++ {
		ambiguous, err = s.pipelineOnce(ctx, reads, writes)
		if err == nil || ambiguous || !retryable(err) || attempt == maxRetries {
			return ambiguous, err
		}
	}
}

func (s *Store) pipelineOnce(ctx context.Context, reads func(b *pgx.Batch), writes func(b *pgx.Batch) error) (ambiguous bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// pgxpool closes a connection released inside a transaction rather
	// than reuse it, should the ROLLBACK below fail too.
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	reads(b)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		rollback(ctx, conn)
		return false, err
	}
	b = &pgx.Batch{}
	if err := writes(b); err != nil {
		rollback(ctx, conn)
		return false, err
	}
	return s.commitBatch(ctx, conn, b, true)
}

// commitBatch sends b, a transaction's last pipeline, with COMMIT queued
// at its end, on conn, inside the transaction. sent says whether the
// transaction's statements reached the server before (then a broken
// connection is ambiguous whatever pgx says of this pipeline).
func (s *Store) commitBatch(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch, sent bool) (ambiguous bool, err error) {
	b.Queue("COMMIT")
	err = conn.SendBatch(ctx, b).Close()
	if err == nil && s.commitFault != nil {
		err = s.commitFault()
	}
	if err == nil {
		return false, nil
	}
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) {
		// The server refused a statement and skipped the rest, COMMIT
		// included: nothing was written.
		rollback(ctx, conn)
		return false, err
	}
	return sent || !pgconn.SafeToRetry(err), err
}

// oneTripTx runs what queue queues as one transaction in ONE round trip,
// BEGIN and COMMIT included: pipelineTx for a transaction whose writes
// need nothing its reads return (every check that can refuse it fails in
// the server). Unlike batchTx it is an explicit transaction block, so
// SET LOCAL applies. A deadlock or a serialization failure runs it again;
// ambiguous is as in pipelineTx.
func (s *Store) oneTripTx(ctx context.Context, queue func(b *pgx.Batch)) (ambiguous bool, err error) {
	for attempt := 0; ; attempt++ {
		ambiguous, err = s.oneTripOnce(ctx, queue)
		if err == nil || ambiguous || !retryable(err) || attempt == maxRetries {
			return ambiguous, err
		}
	}
}

func (s *Store) oneTripOnce(ctx context.Context, queue func(b *pgx.Batch)) (ambiguous bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release() // closed rather than reused if the ROLLBACK fails (pipelineOnce)
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	queue(b)
	return s.commitBatch(ctx, conn, b, false)
}

// batchTx runs what queue queues as one transaction in ONE round trip: no
// BEGIN nor COMMIT, pgx sends the batch with a single Sync at its end, and
// PostgreSQL runs every statement before a Sync in one implicit
// transaction, which it commits at the Sync unless a statement failed
// (then it rolls it back there: no ROLLBACK to send). For a transaction
// that needs no Go step between its reads and its writes (pipelineTx's
// second round trip only carried COMMIT).
//
// As with pipelineTx's second pipeline, a check that must stop the commit
// has to fail in the server: a Go callback's error comes after the Sync.
// A server error (SQLState) means nothing was written; a deadlock or
// serialization failure runs the batch again. Any other error is
// ambiguous (the server may have committed) unless pgx says nothing was
// sent (pgconn.SafeToRetry).
func (s *Store) batchTx(ctx context.Context, queue func(b *pgx.Batch)) (ambiguous bool, err error) {
	for attempt := 0; ; attempt++ {
		b := &pgx.Batch{}
		queue(b)
		err = s.pool.SendBatch(ctx, b).Close()
		if err == nil && s.commitFault != nil {
			err = s.commitFault()
		}
		if err == nil {
			return false, nil
		}
		var pe interface{ SQLState() string }
		if !errors.As(err, &pe) {
			return !pgconn.SafeToRetry(err), err
		}
		if !retryable(err) || attempt == maxRetries {
			return false, err
		}
	}
}

// rollback ends the failed transaction on conn; if it cannot, the
// connection is closed on release (see pipelineOnce).
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, "ROLLBACK")
}
