package plugin

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
)

// syncBuffer is a buffer that the server's goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type failing struct{}

func (failing) Get(context.Context, Config, Ref) (Secret, error) {
	return Secret{}, errors.New("the backend broke")
}

// TestServeLogs: serving, each call at debug level, a failure with no
// class of the protocol at warning level, and the shutdown.
func TestServeLogs(t *testing.T) {
	var logs syncBuffer
	endpoint := "unix://" + filepath.Join(t.TempDir(), "p.sock")
	lis, err := Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeListener(ctx, lis, Store{Name: "logged", Reader: failing{}},
			WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	rpc := pluginv1.NewSecretStoreClient(conn)
	if _, err := rpc.Handshake(context.Background(), &pluginv1.HandshakeRequest{ProtocolVersions: []string{"v1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rpc.Get(context.Background(), &pluginv1.GetRequest{Ref: &pluginv1.Ref{Key: "db"}}); err == nil {
		t.Fatal("the failing store's Get succeeded")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	lines := strings.Split(out, "\n")
	for _, want := range [][]string{
		{"level=INFO msg=serving plugin=logged"},
		{"level=DEBUG msg=call", "method=/watchword.plugin.v1.SecretStore/Handshake code=OK"},
		{`level=WARN msg="call failed with no error class of the protocol"`, "method=/watchword.plugin.v1.SecretStore/Get code=Unknown", `message="the backend broke"`},
		{"level=INFO msg=stopped"},
	} {
		found := false
		for _, l := range lines {
			all := true
			for _, f := range want {
				all = all && strings.Contains(l, f)
			}
			found = found || all
		}
		if !found {
			t.Errorf("no line of the log holds %q:\n%s", want, out)
		}
	}
}

func TestOptionsRefuseNonsense(t *testing.T) {
	for name, opt := range map[string]Option{
		"nil logger":        WithLogger(nil),
		"nil TLS":           WithTLSConfig(nil),
		"zero timeout":      WithShutdownTimeout(0),
		"TLS without files": WithTLS(TLSFiles{CAFile: "ca.crt"}),
	} {
		if _, err := options([]Option{opt}); err == nil {
			t.Errorf("%s was accepted", name)
		}
	}
}
