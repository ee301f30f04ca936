package plugin

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

type nothing struct{}

func (nothing) Get(context.Context, Config, Ref) (Secret, error) { return Secret{}, ErrNotFound }

func TestServeReplacesAStaleSocketAndRemovesItsOwn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.sock")
	// A socket an earlier run left behind.
	old, err := Listen("unix://" + path)
	if err != nil {
		t.Fatal(err)
	}
	if ul, ok := old.(interface{ SetUnlinkOnClose(bool) }); ok {
		ul.SetUnlinkOnClose(false)
	}
	_ = old.Close()
	lis, err := Listen("unix://" + path)
	if err != nil {
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, lis, Store{Name: "n", Reader: nothing{}}) }()
	cancel()
	if err = <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err = os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket is still there after shutdown: %v", err)
	}
}

func TestServeRefusesAStoreWithoutReader(t *testing.T) {
	if err := Serve(context.Background(), "unix:///nonexistent/p.sock", Store{Name: "n"}); err == nil {
		t.Fatal("a store without a Reader was served")
	}
}
