package postgres

// reserveLeanMigration makes the reservation step cheaper in the server,
// where most of its cost was: each statement of a PL/pgSQL function costs
// an executor start, more than the few rows it reads, and a grouped
// reserve ran the function once per hold, seven statements each.
//
// reserve_hold, a lone reserve, takes three statements instead of six:
// one scan sums the account's live holds and, of those, the key's (a key
// belongs to one account, so its holds are among the account's); the
// call's previous hold (a failover's re-size) is left out of the sums and
// replaced by an upsert instead of deleted first; and expired holds are
// not deleted at every reserve any more (the sums skip them, the reaper
// deletes them).
//
// reserve_holds reserves a whole group in one call, so the group is one
// statement: it locks the group's accounts (in id order, as every reserve
// and settle does), reads each account's and key's sums once, and then
// for each hold in turn only writes it, keeping the sums in variables as
// consecutive reserve_hold calls would find them in the table. A hold
// whose account does not exist gets no row.
//
// holds_expires goes: it served the delete of an account's expired holds
// at every reserve, and cost every hold an index entry; the reaper's
// delete once a minute scans a table of live holds.
//
// The accounts are locked by a statement of their own, first, for the
// reason reserveMigration gives: the statements after it take their
// snapshots once the locks are held. FOR UPDATE returns each locked row
// as the commit it waited for left it, so the balances are read with it.
var reserveLeanMigration = migration{9, "reserve_hold in three statements, reserve_holds for a group in one", `
DROP INDEX holds_expires;

-- hold_amount is the arithmetic of store.HoldRoom: as many of want records
-- at price as the available balance and, when the key has a limit (room
-- not NULL), the key's room pay for, in micro-credits.
CREATE FUNCTION hold_amount(available BIGINT, room BIGINT, price BIGINT, want INTEGER) RETURNS BIGINT
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN want > 0 AND price > 0
		THEN LEAST(want, GREATEST(available, 0) / price,
			CASE WHEN room IS NULL THEN want ELSE GREATEST(room, 0) / price END) * price
		ELSE 0 END
$$;

CREATE OR REPLACE FUNCTION reserve_hold(hold_id TEXT, account TEXT, key TEXT, buckets TIMESTAMPTZ[], periods TEXT[],
	price BIGINT, want INTEGER, timeout_secs DOUBLE PRECISION)
RETURNS TABLE (r_balance BIGINT, r_held BIGINT, r_period TEXT, r_limit BIGINT, r_room BIGINT, r_amount BIGINT)
LANGUAGE plpgsql SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
	key_held BIGINT;
BEGIN
	SELECT a.balance INTO r_balance FROM accounts a WHERE a.id = account FOR UPDATE;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	SELECT COALESCE(sum(h.amount), 0), COALESCE(sum(h.amount) FILTER (WHERE h.key_id = key), 0)
		INTO r_held, key_held
		FROM holds h WHERE h.account_id = account AND h.expires_at > now() AND h.id <> hold_id;
	IF key IS NOT NULL THEN
		SELECT k.limit_period, k.limit_credits, k.limit_credits
			- COALESCE((SELECT s.credits FROM key_spend s WHERE s.key_id = k.id AND s.period = k.limit_period
				AND s.bucket = buckets[array_position(periods, k.limit_period)]), 0)
			- key_held
		INTO r_period, r_limit, r_room FROM api_keys k WHERE k.id = key;
	END IF;
	r_amount := hold_amount(r_balance - r_held, r_room, price, want);
	IF r_amount > 0 THEN
		INSERT INTO holds AS h (id, account_id, key_id, amount, expires_at)
		VALUES (hold_id, account, key, r_amount, now() + make_interval(secs => timeout_secs))
		ON CONFLICT (id) DO UPDATE SET account_id = EXCLUDED.account_id, key_id = EXCLUDED.key_id,
			amount = EXCLUDED.amount, expires_at = EXCLUDED.expires_at;
	ELSE
		DELETE FROM holds h WHERE h.id = hold_id;
	END IF;
	RETURN NEXT;
END
$$;

-- in_buckets holds, for hold i, the start of each period's bucket at
-- in_buckets[(i - 1) * cardinality(periods) + the period's position].
CREATE FUNCTION reserve_holds(in_ids TEXT[], in_accounts TEXT[], in_keys TEXT[], in_buckets TIMESTAMPTZ[],
	periods TEXT[], in_prices BIGINT[], in_wants INTEGER[], timeout_secs DOUBLE PRECISION)
RETURNS TABLE (r_i INTEGER, r_balance BIGINT, r_held BIGINT, r_period TEXT, r_limit BIGINT, r_room BIGINT, r_amount BIGINT)
LANGUAGE plpgsql SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
	np CONSTANT INTEGER := cardinality(periods);
	-- per account of the group: balance, live holds' sum
	a_ids TEXT[]; a_balance BIGINT[]; a_held BIGINT[];
	-- per key of the group: limit, live holds' sum, spend in the bucket last read
	k_ids TEXT[]; k_period TEXT[]; k_limit BIGINT[]; k_held BIGINT[]; k_bucket TIMESTAMPTZ[]; k_spend BIGINT[];
	-- the holds of the group's calls: the live ones they had (a re-size
	-- replaces them) and those the group sets (p_set), written at the end
	p_ids TEXT[]; p_accounts TEXT[]; p_keys TEXT[]; p_amounts BIGINT[]; p_set BOOLEAN[];
	a INTEGER; k INTEGER; p INTEGER; j INTEGER; b TIMESTAMPTZ; any_zero BOOLEAN := false;
BEGIN
	SELECT array_agg(l.id), array_agg(l.balance) INTO a_ids, a_balance
		FROM (SELECT x.id, x.balance FROM accounts x WHERE x.id = ANY(in_accounts) ORDER BY x.id FOR UPDATE) l;
	IF a_ids IS NULL THEN
		RETURN;
	END IF;
	SELECT array_agg(COALESCE((SELECT sum(h.amount) FROM holds h WHERE h.account_id = u.id AND h.expires_at > now()), 0) ORDER BY u.ord)
		INTO a_held FROM unnest(a_ids) WITH ORDINALITY AS u(id, ord);
	SELECT array_agg(x.id), array_agg(x.limit_period), array_agg(x.limit_credits),
		array_agg(COALESCE((SELECT sum(h.amount) FROM holds h WHERE h.key_id = x.id AND h.expires_at > now()), 0))
		INTO k_ids, k_period, k_limit, k_held
		FROM api_keys x WHERE x.id = ANY(in_keys);
	k_spend := array_fill(0::BIGINT, ARRAY[COALESCE(cardinality(k_ids), 0)]);
	k_bucket := array_fill(NULL::TIMESTAMPTZ, ARRAY[COALESCE(cardinality(k_ids), 0)]);
	SELECT array_agg(h.id), array_agg(h.account_id), array_agg(h.key_id), array_agg(h.amount), array_agg(false)
		INTO p_ids, p_accounts, p_keys, p_amounts, p_set
		FROM holds h WHERE h.id = ANY(in_ids) AND h.expires_at > now();
	FOR i IN 1 .. cardinality(in_ids) LOOP
		a := array_position(a_ids, in_accounts[i]);
		CONTINUE WHEN a IS NULL;
		-- The call's previous hold is replaced: from here on it counts
		-- for nothing.
		p := array_position(p_ids, in_ids[i]);
		IF p IS NOT NULL THEN
			j := array_position(a_ids, p_accounts[p]);
			IF j IS NOT NULL THEN
				a_held[j] := a_held[j] - p_amounts[p];
			END IF;
			j := array_position(k_ids, p_keys[p]);
			IF j IS NOT NULL THEN
				k_held[j] := k_held[j] - p_amounts[p];
			END IF;
		END IF;
		r_i := i;
		r_balance := a_balance[a];
		r_held := a_held[a];
		r_period := NULL; r_limit := NULL; r_room := NULL;
		k := NULL;
		IF in_keys[i] IS NOT NULL THEN
			k := array_position(k_ids, in_keys[i]);
		END IF;
		IF k IS NOT NULL THEN
			r_period := k_period[k];
			r_limit := k_limit[k];
			IF r_period IS NOT NULL AND r_limit IS NOT NULL THEN
				b := in_buckets[(i - 1) * np + array_position(periods, r_period)];
				IF k_bucket[k] IS DISTINCT FROM b THEN
					k_spend[k] := COALESCE((SELECT s.credits FROM key_spend s
						WHERE s.key_id = k_ids[k] AND s.period = r_period AND s.bucket = b), 0);
					k_bucket[k] := b;
				END IF;
				r_room := r_limit - k_spend[k] - k_held[k];
			END IF;
		END IF;
		r_amount := hold_amount(r_balance - r_held, r_room, in_prices[i], in_wants[i]);
		a_held[a] := a_held[a] + r_amount;
		IF k IS NOT NULL THEN
			k_held[k] := k_held[k] + r_amount;
		END IF;
		IF p IS NULL THEN
			p_ids := p_ids || in_ids[i];
			p := cardinality(p_ids);
		END IF;
		p_accounts[p] := in_accounts[i];
		p_keys[p] := in_keys[i];
		p_amounts[p] := r_amount;
		p_set[p] := true;
		any_zero := any_zero OR r_amount = 0;
		RETURN NEXT;
	END LOOP;
	-- Each call's last hold, written once: an upsert for those that hold
	-- money, a delete for those that hold none (their previous hold, live
	-- or expired, goes).
	INSERT INTO holds AS h (id, account_id, key_id, amount, expires_at)
		SELECT w.id, w.account_id, w.key_id, w.amount, now() + make_interval(secs => timeout_secs)
		FROM unnest(p_ids, p_accounts, p_keys, p_amounts, p_set) AS w(id, account_id, key_id, amount, touched)
		WHERE w.touched AND w.amount > 0
		ON CONFLICT (id) DO UPDATE SET account_id = EXCLUDED.account_id, key_id = EXCLUDED.key_id,
			amount = EXCLUDED.amount, expires_at = EXCLUDED.expires_at;
	IF any_zero THEN
		DELETE FROM holds h WHERE h.id IN (SELECT w.id FROM unnest(p_ids, p_amounts, p_set) AS w(id, amount, touched)
			WHERE w.touched AND w.amount = 0);
	END IF;
END
$$;
`}

func init() { migrations = append(migrations, reserveLeanMigration) }
