package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/watchword-dev/watchword/pkg/plugin"
)

// The keys of a store's plugin.config.
const (
	cfgDSNFile = "dsnFile" // a file holding the connection string
	cfgTable   = "table"   // the secrets table; default defaultTable
)

const defaultTable = "watchword_secrets"

// postgres keeps secrets in PostgreSQL tables (schema.go). One plugin
// serves many stores: each store's config names the database (through a
// file holding its connection string, or the plugin's default) and the
// table; the plugin keeps one pool per connection string.
type postgres struct {
	// defaultDSN is the connection string of stores whose config names
	// no dsnFile.
	defaultDSN string

	mu      sync.Mutex
	pools   map[string]*pgxpool.Pool
	ensured map[string]bool // dsn + "\x00" + table
}

func newPostgres(defaultDSN string) *postgres {
	return &postgres{defaultDSN: defaultDSN, pools: map[string]*pgxpool.Pool{}, ensured: map[string]bool{}}
}

// store is the plugin: reads (one by one and in batches), versions,
// writes, deletes and a watch.
func (p *postgres) store() plugin.Store {
	return plugin.Store{Name: "postgres", Version: "v0.1.0", Reader: p, Versions: p, Writer: p, Batch: p, Watcher: p,
		ValidateConfig: validateConfig}
}

func validateConfig(cfg plugin.Config) error {
	for k := range cfg {
		if k != cfgDSNFile && k != cfgTable {
			return fmt.Errorf("config key %q is unknown; the postgres plugin knows %q and %q: %w", k, cfgDSNFile, cfgTable, plugin.ErrInvalidConfig)
		}
	}
	if t, ok := cfg[cfgTable]; ok && !tableName.MatchString(t) {
		return fmt.Errorf("config %s %q is not a table name of lower-case letters, digits and underscores (at most 41): %w", cfgTable, t, plugin.ErrInvalidConfig)
	}
	return nil
}

func (p *postgres) dsn(cfg plugin.Config) (string, error) {
	file := cfg[cfgDSNFile]
	if file == "" {
		if p.defaultDSN == "" {
			return "", fmt.Errorf("the store's config names no %s and the plugin has no -dsn-file: %w", cfgDSNFile, plugin.ErrInvalidConfig)
		}
		return p.defaultDSN, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading the connection string from %s %s: %w", cfgDSNFile, file, plugin.ErrInvalidConfig)
	}
	return strings.TrimSpace(string(b)), nil
}

// conn returns the pool and tables of a store, creating the pool and the
// tables on first use.
func (p *postgres) conn(ctx context.Context, cfg plugin.Config) (*pgxpool.Pool, tables, error) {
	if err := validateConfig(cfg); err != nil {
		return nil, tables{}, err
	}
	dsn, err := p.dsn(cfg)
	if err != nil {
		return nil, tables{}, err
	}
	name := cfg[cfgTable]
	if name == "" {
		name = defaultTable
	}
	t := tablesOf(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	pool := p.pools[dsn]
	if pool == nil {
		pc, perr := pgxpool.ParseConfig(dsn)
		if perr != nil {
			// The parser's message may repeat the string, password and all.
			return nil, tables{}, fmt.Errorf("the connection string is not one PostgreSQL accepts: %w", plugin.ErrInvalidConfig)
		}
		if pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
			return nil, tables{}, classify("connecting", err)
		}
		p.pools[dsn] = pool
	}
	if !p.ensured[dsn+"\x00"+name] {
		if err := ensure(ctx, pool, t); err != nil {
			return nil, tables{}, classify("creating the tables "+name, err)
		}
		p.ensured[dsn+"\x00"+name] = true
	}
	return pool, t, nil
}

// close closes every pool.
func (p *postgres) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pool := range p.pools {
		pool.Close()
	}
}

// classify turns a database error into an error of the SDK's classes. Its
// message keeps the SQLSTATE and PostgreSQL's message, which names
// objects, not the values of this plugin's rows (they are never in SQL
// text: they are parameters).
func classify(what string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		class := plugin.ErrUnavailable
		switch {
		case pgErr.Code == "42501" || strings.HasPrefix(pgErr.Code, "28"):
			class = plugin.ErrPermissionDenied
		case pgErr.Code == "40001" || pgErr.Code == "40P01" || pgErr.Code == "23505":
			class = plugin.ErrUnavailable // a race with another writer: retried
		case strings.HasPrefix(pgErr.Code, "3D") || strings.HasPrefix(pgErr.Code, "42"):
			class = plugin.ErrInvalidConfig // no such database, table or column
		}
		return fmt.Errorf("%s: PostgreSQL error %s (%s): %w", what, pgErr.Code, pgErr.Message, class)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, plugin.ErrUnavailable)
	}
	return fmt.Errorf("%s: %v: %w", what, err, plugin.ErrUnavailable)
}

// encode and decode convert fields to the JSON object stored in the
// fields column: field name to base64 value, so that any bytes survive
// and a person with psql can write one (encode('…', 'base64')).
func encode(fields map[string][]byte) ([]byte, error) {
	m := make(map[string]string, len(fields))
	for k, v := range fields {
		m[k] = base64.StdEncoding.EncodeToString(v)
	}
	return json.Marshal(m)
}

func decode(key string, raw []byte) (map[string][]byte, error) {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("key %q: the fields column is not an object of base64 strings: %w", key, plugin.ErrUnavailable)
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("key %q: field %q is not base64: %w", key, k, plugin.ErrUnavailable)
		}
		out[k] = b
	}
	return out, nil
}

func parseVersion(key, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("key %q has no version %q: %w", key, v, plugin.ErrNotFound)
	}
	return n, nil
}

func (p *postgres) Get(ctx context.Context, cfg plugin.Config, ref plugin.Ref) (plugin.Secret, error) {
	pool, t, err := p.conn(ctx, cfg)
	if err != nil {
		return plugin.Secret{}, err
	}
	var (
		version int64
		raw     []byte
		row     pgx.Row
	)
	if ref.Version == "" {
		row = pool.QueryRow(ctx, `SELECT version, fields FROM `+t.secrets+` WHERE key = $1`, ref.Key)
	} else {
		n, verr := parseVersion(ref.Key, ref.Version)
		if verr != nil {
			return plugin.Secret{}, verr
		}
		row = pool.QueryRow(ctx, `SELECT version, fields FROM `+t.versions+` WHERE key = $1 AND version = $2`, ref.Key, n)
	}
	if serr := row.Scan(&version, &raw); serr != nil {
		if errors.Is(serr, pgx.ErrNoRows) {
			if ref.Version != "" {
				return plugin.Secret{}, fmt.Errorf("key %q has no version %q: %w", ref.Key, ref.Version, plugin.ErrNotFound)
			}
			return plugin.Secret{}, fmt.Errorf("key %q does not exist: %w", ref.Key, plugin.ErrNotFound)
		}
		return plugin.Secret{}, classify(fmt.Sprintf("reading key %q", ref.Key), serr)
	}
	fields, err := decode(ref.Key, raw)
	if err != nil {
		return plugin.Secret{}, err
	}
	return plugin.Secret{Version: strconv.FormatInt(version, 10), Fields: fields}, nil
}

// GetBatch reads every ref with one query: the current versions from the
// secrets table and the pinned ones from the versions table.
func (p *postgres) GetBatch(ctx context.Context, cfg plugin.Config, refs []plugin.Ref) ([]plugin.BatchResult, error) {
	pool, t, err := p.conn(ctx, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]plugin.BatchResult, len(refs))
	keys := make([]string, 0, len(refs))
	versions := make([]int64, 0, len(refs)) // 0: the current version
	for i, r := range refs {
		n := int64(0)
		if r.Version != "" {
			if n, err = parseVersion(r.Key, r.Version); err != nil {
				out[i].Err = err
				continue
			}
		}
		keys = append(keys, r.Key)
		versions = append(versions, n)
	}
	rows, err := pool.Query(ctx, `
SELECT w.key, w.want, s.version, s.fields
FROM unnest($1::text[], $2::bigint[]) AS w(key, want)
JOIN `+t.secrets+` s ON s.key = w.key AND w.want = 0
UNION ALL
SELECT w.key, w.want, v.version, v.fields
FROM unnest($1::text[], $2::bigint[]) AS w(key, want)
JOIN `+t.versions+` v ON v.key = w.key AND v.version = w.want`, keys, versions)
	if err != nil {
		return nil, classify(fmt.Sprintf("reading %d keys", len(keys)), err)
	}
	type want struct {
		key     string
		version int64
	}
	found := map[want]plugin.Secret{}
	broken := map[want]error{} // rows whose fields column is not what the plugin writes
	for rows.Next() {
		var (
			w       want
			version int64
			raw     []byte
		)
		if err := rows.Scan(&w.key, &w.version, &version, &raw); err != nil {
			rows.Close()
			return nil, classify("reading a batch", err)
		}
		fields, derr := decode(w.key, raw)
		if derr != nil {
			broken[w] = derr
			continue
		}
		found[w] = plugin.Secret{Version: strconv.FormatInt(version, 10), Fields: fields}
	}
	if err := rows.Err(); err != nil {
		return nil, classify("reading a batch", err)
	}
	for i, r := range refs {
		if out[i].Err != nil {
			continue
		}
		n := int64(0)
		if r.Version != "" {
			n, _ = parseVersion(r.Key, r.Version)
		}
		w := want{r.Key, n}
		s, ok := found[w]
		switch {
		case broken[w] != nil:
			out[i].Err = broken[w]
		case !ok && r.Version != "":
			out[i].Err = fmt.Errorf("key %q has no version %q: %w", r.Key, r.Version, plugin.ErrNotFound)
		case !ok:
			out[i].Err = fmt.Errorf("key %q does not exist: %w", r.Key, plugin.ErrNotFound)
		default:
			out[i].Secret = s
		}
	}
	return out, nil
}

func (p *postgres) CurrentVersion(ctx context.Context, cfg plugin.Config, key string) (string, error) {
	pool, t, err := p.conn(ctx, cfg)
	if err != nil {
		return "", err
	}
	var version int64
	if err := pool.QueryRow(ctx, `SELECT version FROM `+t.secrets+` WHERE key = $1`, key).Scan(&version); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", fmt.Errorf("key %q does not exist: %w", key, plugin.ErrNotFound)
		}
		return "", classify(fmt.Sprintf("the version of key %q", key), err)
	}
	return strconv.FormatInt(version, 10), nil
}

// Put writes key as owner, with check-and-set: it reads the row, checks
// the ownership marker, and updates the row only if it is still as read
// (same version and marker). A concurrent writer that changed it in
// between makes the write fail with ErrUnavailable, and Watchword retries.
func (p *postgres) Put(ctx context.Context, cfg plugin.Config, key string, pub plugin.Publication, owner plugin.Owner) (string, error) {
	if len(pub.Labels) > 0 || len(pub.Annotations) > 0 || pub.Type != "" {
		return "", fmt.Errorf("key %q: the postgres store keeps no labels, annotations or type: %w", key, plugin.ErrNotSupported)
	}
	pool, t, err := p.conn(ctx, cfg)
	if err != nil {
		return "", err
	}
	raw, err := encode(pub.Fields)
	if err != nil {
		return "", fmt.Errorf("key %q: encoding the fields: %w", key, plugin.ErrInvalidConfig)
	}
	var (
		version  int64
		current  []byte
		marker   *string
		lostRace = fmt.Errorf("key %q changed while it was written; try again: %w", key, plugin.ErrUnavailable)
	)
	err = pool.QueryRow(ctx, `SELECT version, fields, owner FROM `+t.secrets+` WHERE key = $1`, key).Scan(&version, &current, &marker)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		err = pool.QueryRow(ctx, `INSERT INTO `+t.secrets+` (key, fields, owner) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING RETURNING version`,
			key, raw, owner.ID).Scan(&version)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", lostRace
		}
		if err != nil {
			return "", classify(fmt.Sprintf("writing key %q", key), err)
		}
		return strconv.FormatInt(version, 10), nil
	case err != nil:
		return "", classify(fmt.Sprintf("reading key %q before writing it", key), err)
	}
	switch {
	case marker != nil && *marker == owner.ID:
	case marker != nil:
		return "", fmt.Errorf("key %q is owned by %s: %w", key, *marker, plugin.ErrNotOwned)
	case !owner.Adopt:
		return "", fmt.Errorf("key %q carries no ownership marker; it is written only with adopt: %w", key, plugin.ErrNotOwned)
	}
	if marker != nil && sameFields(key, current, pub.Fields) {
		return strconv.FormatInt(version, 10), nil // unchanged: no new version
	}
	var written int64
	err = pool.QueryRow(ctx, `UPDATE `+t.secrets+` SET fields = $2, owner = $3 WHERE key = $1 AND version = $4 AND owner IS NOT DISTINCT FROM $5 RETURNING version`,
		key, raw, owner.ID, version, marker).Scan(&written)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", lostRace
	}
	if err != nil {
		return "", classify(fmt.Sprintf("writing key %q", key), err)
	}
	return strconv.FormatInt(written, 10), nil
}

func sameFields(key string, raw []byte, want map[string][]byte) bool {
	got, err := decode(key, raw)
	if err != nil {
		return false
	}
	return maps.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) })
}

// Delete deletes key if owner owns it; a key that does not exist is no
// error.
func (p *postgres) Delete(ctx context.Context, cfg plugin.Config, key string, owner plugin.Owner) error {
	pool, t, err := p.conn(ctx, cfg)
	if err != nil {
		return err
	}
	var marker *string
	err = pool.QueryRow(ctx, `SELECT owner FROM `+t.secrets+` WHERE key = $1`, key).Scan(&marker)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return classify(fmt.Sprintf("reading key %q before deleting it", key), err)
	case marker == nil || *marker != owner.ID:
		return fmt.Errorf("key %q is not owned by %s; leaving it: %w", key, owner.ID, plugin.ErrNotOwned)
	}
	tag, err := pool.Exec(ctx, `DELETE FROM `+t.secrets+` WHERE key = $1 AND owner = $2`, key, owner.ID)
	if err != nil {
		return classify(fmt.Sprintf("deleting key %q", key), err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("key %q changed while it was deleted; try again: %w", key, plugin.ErrUnavailable)
	}
	return nil
}

// Watch LISTENs on the store's channel, on a connection of its own, and
// announces each key the triggers NOTIFY: every insert, update and delete
// of the secrets table, by the plugin or anyone else.
func (p *postgres) Watch(ctx context.Context, cfg plugin.Config, _ []string, feed plugin.Feed) error {
	pool, t, err := p.conn(ctx, cfg)
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return classify("connecting to watch", err)
	}
	// The connection is LISTENing: it goes back to no pool.
	c := conn.Hijack()
	defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
	if _, err := c.Exec(ctx, `LISTEN `+t.channel); err != nil {
		return classify("listening for changes", err)
	}
	if err := feed.Ready(); err != nil {
		return err
	}
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return classify("waiting for changes", err)
		}
		if err := feed.Changed(n.Payload); err != nil {
			return err
		}
	}
}
