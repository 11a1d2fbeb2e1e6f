package postgres

// releaseMigration is Release as one statement that commits without
// waiting for its WAL flush (synchronous_commit off for its transaction
// only; set_config's local form outlives the function, to the commit).
//
// A PostgreSQL crash can then lose only releases committed since the last
// flush, and a lost release brings back a hold that counts until it
// expires (the hold timeout): less money available for a while, never
// more, so no overdraw and no limit crossing. Nothing durable can rely on
// one: every later synchronous commit (a reserve that took the freed
// money, a settle) flushes the WAL up to its own commit record, the
// release's included. Reserve must stay synchronous: a lost hold of a
// call still in flight would let its settle charge past the key's limit
// and spend money another call was promised.
var releaseMigration = migration{8, "release_hold: Release without waiting for its WAL flush", `
CREATE FUNCTION release_hold(hold_id TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	DELETE FROM holds h WHERE h.id = hold_id;
END
$$;
`}

func init() { migrations = append(migrations, releaseMigration) }
