package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/rundoc"
	"socialrouter/caddymodule/store/internal/settle"
)

// appendDoc appends to dst the stored document of a run of the account,
// decoded from rundoc's form straight out of the connection's buffer.
// ErrNotFound for an unknown id or another account's run.
func (s *Store) appendDoc(ctx context.Context, dst []byte, accountID, runID string) ([]byte, error) {
	rows, err := s.pool.Query(ctx, `SELECT doc FROM runs WHERE id = $1 AND account_id = $2`, runID, accountID)
	if err != nil {
		return dst, fmt.Errorf("getting run %s: %v", runID, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return dst, fmt.Errorf("getting run %s: %v", runID, err)
		}
		return dst, fmt.Errorf("getting run %s: %w", runID, store.ErrNotFound)
	}
	v := rows.RawValues()[0]
	if rows.FieldDescriptions()[0].Format != pgx.BinaryFormatCode {
		// A text-format bytea is hex: let pgx decode it.
		if err := rows.Scan(&v); err != nil {
			return dst, fmt.Errorf("getting run %s: %v", runID, err)
		}
	}
	out, err := rundoc.Append(dst, v)
	if err != nil {
		return dst, fmt.Errorf("getting run %s: %v", runID, err)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return dst, fmt.Errorf("getting run %s: %v", runID, err)
	}
	return out, nil
}

// GetRun returns a run of the account; ErrNotFound for an unknown id or
// another account's run.
func (s *Store) GetRun(ctx context.Context, accountID, runID string) (runs.Run, error) {
	doc, err := s.appendDoc(ctx, nil, accountID, runID)
	if err != nil {
		return runs.Run{}, err
	}
	return settle.DecodeRun(doc)
}

// GetRunJSON appends to dst a run of the account in its API form (json.Marshal of
// what GetRun returns): the stored document, decoded into dst, with its
// scope members cut off, without decoding the records.
// ErrNotFound for an unknown id or another account's run.
func (s *Store) GetRunJSON(ctx context.Context, dst []byte, accountID, runID string) ([]byte, error) {
	out, err := s.appendDoc(ctx, dst, accountID, runID)
	if err != nil {
		return dst, err
	}
	doc := out[len(dst):len(out):len(out)]
	api, err := settle.RunAPIJSON(doc)
	if err != nil {
		return dst, err
	}
	if len(api) > 0 && len(doc) > 0 && &api[0] == &doc[0] {
		return out[:len(dst)+len(api)], nil // cut in place
	}
	return append(dst, api...), nil
}
