package plugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
	"github.com/watchword-dev/watchword/internal/pluginwire"
)

// ShutdownTimeout is how long Serve lets calls under way finish once its
// context is done, before it closes their connections.
const ShutdownTimeout = 10 * time.Second

// Serve serves store on endpoint, a unix socket such as
// unix:///run/watchword/mystore.sock, until ctx is done; then it stops
// accepting calls, lets those under way finish (ShutdownTimeout at most)
// and removes the socket. A socket file left by an earlier run is
// replaced. It returns nil after a shutdown that ctx asked for.
func Serve(ctx context.Context, endpoint string, store Store) error {
	if err := store.validate(); err != nil {
		return err
	}
	lis, err := Listen(endpoint)
	if err != nil {
		return err
	}
	return ServeListener(ctx, lis, store)
}

// Listen opens the unix socket of endpoint, replacing a socket file an
// earlier run left, for ServeListener: a plugin (or a test) that must know
// the socket is ready before it serves calls Listen, then ServeListener.
func Listen(endpoint string) (net.Listener, error) {
	path, err := pluginwire.SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if fi, serr := os.Lstat(path); serr == nil && fi.Mode().Type() == fs.ModeSocket {
		if rerr := os.Remove(path); rerr != nil {
			return nil, fmt.Errorf("removing the socket an earlier run left at %s: %w", path, rerr)
		}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", endpoint, err)
	}
	return lis, nil
}

// ServeListener is Serve on a listener from Listen; it closes the
// listener, which removes its socket, when it returns.
func ServeListener(ctx context.Context, lis net.Listener, store Store) error {
	if err := store.validate(); err != nil {
		_ = lis.Close()
		return err
	}
	endpoint := pluginwire.UnixScheme + lis.Addr().String()
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(pluginwire.MaxMessageSize), grpc.MaxSendMsgSize(pluginwire.MaxMessageSize))
	pluginv1.RegisterSecretStoreServer(srv, &server{store: store})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", endpoint, err)
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(ShutdownTimeout)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		srv.Stop()
		<-stopped
	}
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serving on %s: %w", endpoint, err)
	}
	return nil
}

// server serves the protocol for one Store.
type server struct {
	pluginv1.UnimplementedSecretStoreServer
	store Store
}

func config(c *pluginv1.Config) Config { return Config(c.GetValues()) }

func fail(err error) error { return pluginwire.Status(err).Err() }

func unimplemented(capability string) error {
	return status.Errorf(codes.Unimplemented, "this plugin does not have the %s capability", capability)
}

func (s *server) Handshake(_ context.Context, req *pluginv1.HandshakeRequest) (*pluginv1.HandshakeResponse, error) {
	if !slices.Contains(req.GetProtocolVersions(), pluginwire.ProtocolVersion) {
		return nil, status.Errorf(codes.FailedPrecondition, "this plugin speaks protocol %s; Watchword offered %v", pluginwire.ProtocolVersion, req.GetProtocolVersions())
	}
	if s.store.ValidateConfig != nil {
		if err := s.store.ValidateConfig(config(req.GetConfig())); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	return &pluginv1.HandshakeResponse{
		ProtocolVersion: pluginwire.ProtocolVersion,
		Capabilities:    pluginwire.CapabilityList(s.store.capabilities()),
		PluginName:      s.store.Name,
		PluginVersion:   s.store.Version,
	}, nil
}

func (s *server) Get(ctx context.Context, req *pluginv1.GetRequest) (*pluginv1.GetResponse, error) {
	sec, err := s.store.Reader.Get(ctx, config(req.GetConfig()), Ref{Key: req.GetRef().GetKey(), Version: req.GetRef().GetVersion()})
	if err != nil {
		return nil, fail(err)
	}
	return &pluginv1.GetResponse{Secret: &pluginv1.Secret{Version: sec.Version, Value: sec.Value, Fields: sec.Fields}}, nil
}

func (s *server) CurrentVersion(ctx context.Context, req *pluginv1.CurrentVersionRequest) (*pluginv1.CurrentVersionResponse, error) {
	if s.store.Versions == nil {
		return nil, unimplemented("versionCheck")
	}
	v, err := s.store.Versions.CurrentVersion(ctx, config(req.GetConfig()), req.GetKey())
	if err != nil {
		return nil, fail(err)
	}
	return &pluginv1.CurrentVersionResponse{Version: v}, nil
}

func owner(o *pluginv1.Owner) Owner { return Owner{ID: o.GetId(), Adopt: o.GetAdopt()} }

func (s *server) Put(ctx context.Context, req *pluginv1.PutRequest) (*pluginv1.PutResponse, error) {
	if s.store.Writer == nil {
		return nil, unimplemented("write")
	}
	if req.GetOwner().GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "a write needs an owner")
	}
	p := Publication{Fields: req.GetFields(), Labels: req.GetLabels(), Annotations: req.GetAnnotations(), Type: req.GetType()}
	v, err := s.store.Writer.Put(ctx, config(req.GetConfig()), req.GetKey(), p, owner(req.GetOwner()))
	if err != nil {
		return nil, fail(err)
	}
	return &pluginv1.PutResponse{Version: v}, nil
}

func (s *server) Delete(ctx context.Context, req *pluginv1.DeleteRequest) (*pluginv1.DeleteResponse, error) {
	if s.store.Writer == nil {
		return nil, unimplemented("delete")
	}
	if req.GetOwner().GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "a delete needs an owner")
	}
	if err := s.store.Writer.Delete(ctx, config(req.GetConfig()), req.GetKey(), owner(req.GetOwner())); err != nil {
		return nil, fail(err)
	}
	return &pluginv1.DeleteResponse{}, nil
}
