package postgres

// rundocMigration stores run documents as the client compressed them
// (rundoc: an S2 block behind a marker byte), and the fields the run list
// shows as columns. As a JSON column, a document was parsed on insert and
// compressed by the server: ~220 µs of backend CPU per 35 KiB document
// against ~26 µs for the compressed bytes, the largest cost of a settle in
// the database. STORAGE EXTERNAL keeps the server from compressing them
// again. Documents written before stay plain JSON (first byte '{'), which
// rundoc reads as they are. The update and the type change each rewrite
// the table once.
var rundocMigration = migration{6, "run documents stored compressed by the client, listed fields as columns", `
ALTER TABLE runs
	ADD COLUMN kind      TEXT NOT NULL DEFAULT '',
	ADD COLUMN platform  TEXT NOT NULL DEFAULT '',
	ADD COLUMN service   TEXT NOT NULL DEFAULT '',
	ADD COLUMN served_by TEXT NOT NULL DEFAULT '',
	ADD COLUMN returned  INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET
	kind      = COALESCE(doc->>'kind', ''),
	platform  = COALESCE(doc->>'platform', ''),
	service   = COALESCE(doc->>'service', ''),
	served_by = COALESCE(doc->>'served_by', ''),
	returned  = COALESCE((doc->'pagination'->>'returned')::int, 0);
ALTER TABLE runs ALTER COLUMN doc TYPE BYTEA USING convert_to(doc::text, 'UTF8');
ALTER TABLE runs ALTER COLUMN doc SET STORAGE EXTERNAL;
`}

func init() { migrations = append(migrations, rundocMigration) }
