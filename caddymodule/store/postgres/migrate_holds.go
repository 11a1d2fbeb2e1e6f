package postgres

// reserveMigration makes a reserve one statement: alone, one round trip
// in autocommit (grouped, one statement each in a shared transaction). It
// took two pipelines (BEGIN, the lock and the reads; then the insert and
// COMMIT) and kept the account locked across the round trip between them.
//
// It has to be a function, not one CTE statement: in READ COMMITTED a
// statement's snapshot is taken before its FOR UPDATE waits for the lock,
// so a CTE would sum the holds as they were before the reserve or settle
// it waited for committed, and could hold money twice. Each statement of a
// PL/pgSQL function takes a new snapshot, so the sums read after the lock
// see every commit made under it.
//
// Every call inserts a hold and deletes it, so the holds' indexes are
// full of entries of deleted rows until a vacuum: a plain index scan marks
// each one dead once visited and skips it after, a bitmap scan visits it
// every time, hence enable_bitmapscan off (and the two deletes apart,
// which an OR would make a bitmap scan).
//
// It deletes the call's previous hold (a re-size) and the account's
// expired holds, and inserts the new hold of as many of want records at
// price as the available balance and the key's room pay for, by the
// arithmetic of store.HoldRoom. It returns what that arithmetic read and
// the amount held, which Reserve checks against store.HoldRoom; no row
// when the account does not exist.
var reserveMigration = migration{7, "reserve_hold: Reserve in one statement", `
CREATE FUNCTION reserve_hold(hold_id TEXT, account TEXT, key TEXT, buckets TIMESTAMPTZ[], periods TEXT[],
	price BIGINT, want INTEGER, timeout_secs DOUBLE PRECISION)
RETURNS TABLE (r_balance BIGINT, r_held BIGINT, r_period TEXT, r_limit BIGINT, r_room BIGINT, r_amount BIGINT)
LANGUAGE plpgsql SET enable_bitmapscan = off AS $$
DECLARE
	n BIGINT;
BEGIN
	SELECT a.balance INTO r_balance FROM accounts a WHERE a.id = account FOR UPDATE;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	DELETE FROM holds h WHERE h.id = hold_id;
	DELETE FROM holds h WHERE h.account_id = account AND h.expires_at <= now();
	SELECT COALESCE(sum(h.amount), 0) INTO r_held FROM holds h WHERE h.account_id = account AND h.expires_at > now();
	IF key IS NOT NULL THEN
		SELECT k.limit_period, k.limit_credits, k.limit_credits
			- COALESCE((SELECT s.credits FROM key_spend s WHERE s.key_id = k.id AND s.period = k.limit_period
				AND s.bucket = buckets[array_position(periods, k.limit_period)]), 0)
			- COALESCE((SELECT sum(h.amount) FROM holds h WHERE h.key_id = k.id AND h.expires_at > now()), 0)
		INTO r_period, r_limit, r_room FROM api_keys k WHERE k.id = key;
	END IF;
	r_amount := 0;
	IF want > 0 AND price > 0 THEN
		n := LEAST(want, GREATEST(r_balance - r_held, 0) / price);
		IF r_period IS NOT NULL AND r_limit IS NOT NULL THEN
			n := LEAST(n, GREATEST(r_room, 0) / price);
		END IF;
		r_amount := n * price;
		IF r_amount > 0 THEN
			INSERT INTO holds (id, account_id, key_id, amount, expires_at)
			VALUES (hold_id, account, key, r_amount, now() + make_interval(secs => timeout_secs));
		END IF;
	END IF;
	RETURN NEXT;
END
$$;
`}

func init() { migrations = append(migrations, reserveMigration) }
