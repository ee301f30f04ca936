package pgserver

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestServerStartsAndAnswers(t *testing.T) {
	root, skip, err := Lookup()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	ctx := context.Background()
	s, err := Start(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL %s", v)
}
