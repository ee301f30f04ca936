package main

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5/pgxpool"
)

// tableName is what a table name may be: it is put into SQL as an
// identifier, so only lower-case letters, digits and underscores.
var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// tables are the names of one store's tables, its sequence, trigger
// function and notification channel, all derived from the table's name.
type tables struct {
	secrets, versions, seq, fn, channel string
}

func tablesOf(name string) tables {
	return tables{secrets: name, versions: name + "_versions", seq: name + "_version_seq", fn: name + "_changed", channel: name + "_changed"}
}

// ensure creates the tables, the sequence and the triggers when they do
// not exist. The secrets table holds each key's current fields (a JSON
// object of base64 values), version and ownership marker; a trigger gives
// every change of the fields a new version from the sequence, copies it
// into the versions table (so that pinned versions stay readable), and
// NOTIFYs the key on the channel, whether the change came from the plugin
// or from anyone else (psql, a migration).
func ensure(ctx context.Context, pool *pgxpool.Pool, t tables) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// Two plugins creating the same tables at once would collide.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, t.secrets); err != nil {
		return err
	}
	ddl := fmt.Sprintf(`
CREATE SEQUENCE IF NOT EXISTS %[3]s;
CREATE TABLE IF NOT EXISTS %[1]s (
	key        text PRIMARY KEY,
	fields     jsonb NOT NULL CHECK (jsonb_typeof(fields) = 'object'),
	version    bigint NOT NULL DEFAULT nextval('%[3]s'),
	owner      text,
	updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS %[2]s (
	key     text NOT NULL REFERENCES %[1]s (key) ON DELETE CASCADE,
	version bigint NOT NULL,
	fields  jsonb NOT NULL,
	PRIMARY KEY (key, version)
);
CREATE OR REPLACE FUNCTION %[4]s() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
	IF TG_OP = 'DELETE' THEN
		PERFORM pg_notify('%[5]s', OLD.key);
		RETURN OLD;
	END IF;
	IF TG_WHEN = 'BEFORE' THEN
		IF TG_OP = 'INSERT' OR NEW.fields IS DISTINCT FROM OLD.fields THEN
			NEW.version := nextval('%[3]s');
		ELSE
			NEW.version := OLD.version;
		END IF;
		NEW.updated_at := now();
		RETURN NEW;
	END IF;
	INSERT INTO %[2]s (key, version, fields) VALUES (NEW.key, NEW.version, NEW.fields) ON CONFLICT DO NOTHING;
	PERFORM pg_notify('%[5]s', NEW.key);
	RETURN NEW;
END
$fn$;
CREATE OR REPLACE TRIGGER %[4]s_version BEFORE INSERT OR UPDATE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[4]s();
CREATE OR REPLACE TRIGGER %[4]s_notify AFTER INSERT OR UPDATE OR DELETE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[4]s();
`, t.secrets, t.versions, t.seq, t.fn, t.channel)
	if _, err := tx.Exec(ctx, ddl); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
