package plugin

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
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

// holdingWatch is in place at once and tells of one change, then holds
// until its context ends.
type holdingWatch struct{}

func (holdingWatch) Watch(ctx context.Context, _ Config, _ []string, feed Feed) error {
	if err := feed.Changed("db"); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// TestShutdownEndsOpenWatches: a Watch lasts until Watchword ends it; a
// shutdown ends it at once, with a status that says why, rather than wait
// for the shutdown timeout. Its stream is logged at debug level, as the
// calls are.
func TestShutdownEndsOpenWatches(t *testing.T) {
	var logs syncBuffer
	endpoint := "unix://" + filepath.Join(t.TempDir(), "p.sock")
	lis, err := Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- ServeListener(ctx, lis, Store{Name: "watching", Reader: nothing{}, Watcher: holdingWatch{}},
			WithShutdownTimeout(time.Hour),
			WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	stream, err := pluginv1.NewSecretStoreClient(conn).Watch(context.Background(), &pluginv1.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := stream.Recv(); err != nil || ev.GetKey() != "db" {
		t.Fatalf("the watch's first event: %v, %v; want db", ev, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the shutdown waits for the open watch (its timeout is an hour)")
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "shutting down") {
		t.Fatalf("the watch ended with %v, want UNAVAILABLE saying the plugin is shutting down", err)
	}
	out := logs.String()
	for _, want := range []string{
		`level=DEBUG msg="stream opened" plugin=watching`,
		"method=/watchword.plugin.v1.SecretStore/Watch",
		`level=DEBUG msg="stream ended"`,
		"code=Unavailable",
		"sent=1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not hold %q:\n%s", want, out)
		}
	}
}
