package plugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
	"github.com/watchword-dev/watchword/internal/pluginwire"
)

// ShutdownTimeout is how long Serve lets calls under way finish once its
// context is done, before it closes their connections. Watch streams do
// not wait for it: their context ends when the shutdown starts.
const ShutdownTimeout = 10 * time.Second

// Serve serves store on endpoint until ctx is done: a unix socket such as
// unix:///run/watchword/mystore.sock, or a TCP address such as
// tcp://0.0.0.0:7443, which needs WithTLS (Watchword reaches a TCP
// plugin only over mutual TLS). It also serves the standard gRPC health
// service (grpc.health.v1), SERVING until shutdown. Once ctx is done it
// stops accepting calls, ends the Watch streams (the context given to
// Watcher.Watch ends; Watchword sees the plugin going away and watches
// again once it is back), lets the other calls under way finish
// (ShutdownTimeout at most) and removes its socket. A socket file left by
// an earlier run is replaced. It returns nil after a shutdown that ctx
// asked for.
func Serve(ctx context.Context, endpoint string, store Store, opts ...Option) error {
	if err := store.validate(); err != nil {
		return err
	}
	o, err := options(opts)
	if err != nil {
		return err
	}
	ep, err := pluginwire.ParseEndpoint(endpoint)
	if err != nil {
		return err
	}
	if ep.TCP() && o.tls == nil {
		return errTCPNeedsTLS(endpoint)
	}
	lis, err := Listen(endpoint)
	if err != nil {
		return err
	}
	return serve(ctx, lis, store, o)
}

func errTCPNeedsTLS(endpoint string) error {
	return fmt.Errorf("%s is a TCP address: serving on it needs mutual TLS (WithTLS, or the flags -tls-ca, -tls-cert and -tls-key)", endpoint)
}

// Listen opens endpoint (a unix socket, replacing a socket file an
// earlier run left, or a TCP address) for ServeListener: a plugin (or a
// test) that must know the endpoint is ready before it serves calls
// Listen, then ServeListener.
func Listen(endpoint string) (net.Listener, error) {
	ep, err := pluginwire.ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if !ep.TCP() {
		if fi, serr := os.Lstat(ep.Address); serr == nil && fi.Mode().Type() == fs.ModeSocket {
			if rerr := os.Remove(ep.Address); rerr != nil {
				return nil, fmt.Errorf("removing the socket an earlier run left at %s: %w", ep.Address, rerr)
			}
		}
	}
	lis, err := net.Listen(ep.Network, ep.Address)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", endpoint, err)
	}
	return lis, nil
}

// ServeListener is Serve on a listener from Listen; it closes the
// listener, which removes its socket, when it returns. A TCP listener
// needs WithTLS.
func ServeListener(ctx context.Context, lis net.Listener, store Store, opts ...Option) error {
	if err := store.validate(); err != nil {
		_ = lis.Close()
		return err
	}
	o, err := options(opts)
	if err != nil {
		_ = lis.Close()
		return err
	}
	if lis.Addr().Network() == "tcp" && o.tls == nil {
		_ = lis.Close()
		return errTCPNeedsTLS(pluginwire.TCPScheme + lis.Addr().String())
	}
	return serve(ctx, lis, store, o)
}

func serve(ctx context.Context, lis net.Listener, store Store, o serveOptions) error {
	endpoint := pluginwire.UnixScheme + lis.Addr().String()
	if lis.Addr().Network() == "tcp" {
		endpoint = pluginwire.TCPScheme + lis.Addr().String()
	}
	log := o.logger.With("plugin", store.Name, "endpoint", endpoint)
	sopts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(pluginwire.MaxMessageSize), grpc.MaxSendMsgSize(pluginwire.MaxMessageSize),
		grpc.ChainUnaryInterceptor(logCalls(log)),
		grpc.ChainStreamInterceptor(logStreams(log)),
	}
	if o.tls != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(o.tls)))
	}
	srv := grpc.NewServer(sopts...)
	// stopping ends with the shutdown's start: a Watch lasts until
	// Watchword ends it, and would otherwise hold the shutdown for its
	// whole timeout.
	stopping, stop := context.WithCancel(context.Background())
	defer stop()
	pluginv1.RegisterSecretStoreServer(srv, &server{store: store, stopping: stopping})
	hs := health.NewServer()
	hs.SetServingStatus(pluginv1.SecretStore_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	log.Info("serving", "version", store.Version, "capabilities", store.capabilities().String(), "tls", o.tls != nil)
	select {
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", endpoint, err)
	case <-ctx.Done():
	}
	log.Info("shutting down: ending watches, letting other calls under way finish", "timeout", o.shutdownTimeout)
	hs.Shutdown()
	stop()
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(o.shutdownTimeout)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		log.Info("calls still under way after the shutdown timeout: closing their connections")
		srv.Stop()
		<-stopped
	}
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serving on %s: %w", endpoint, err)
	}
	log.Info("stopped")
	return nil
}

// server serves the protocol for one Store.
type server struct {
	pluginv1.UnimplementedSecretStoreServer
	store Store
	// stopping ends when the shutdown starts.
	stopping context.Context
}

func config(c *pluginv1.Config) Config { return Config(c.GetValues()) }

func fail(err error) error { return pluginwire.Status(err).Err() }

func unimplemented(capability string) error {
	return status.Errorf(codes.Unimplemented, "this plugin does not have the %s capability", capability)
}

func (s *server) Handshake(_ context.Context, req *pluginv1.HandshakeRequest) (*pluginv1.HandshakeResponse, error) {
	version := pluginwire.ChooseVersion(req.GetProtocolVersions())
	if version == "" {
		return nil, status.Errorf(codes.FailedPrecondition, "this plugin speaks protocol %s; Watchword offered %v", strings.Join(pluginwire.ProtocolVersions, " or "), req.GetProtocolVersions())
	}
	if s.store.ValidateConfig != nil {
		if err := s.store.ValidateConfig(config(req.GetConfig())); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	return &pluginv1.HandshakeResponse{
		ProtocolVersion: version,
		// A Watchword that offered only v1 is not told of list, which it
		// could not call.
		Capabilities:  pluginwire.CapabilityList(pluginwire.ForVersion(version, s.store.capabilities())),
		PluginName:    s.store.Name,
		PluginVersion: s.store.Version,
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

func (s *server) List(ctx context.Context, req *pluginv1.ListRequest) (*pluginv1.ListResponse, error) {
	if s.store.Lister == nil {
		return nil, unimplemented("list")
	}
	if req.GetLimit() < 0 || req.GetLimit() > MaxListLimit {
		return nil, status.Errorf(codes.InvalidArgument, "a list page holds at most %d items; %d were asked", MaxListLimit, req.GetLimit())
	}
	page, err := s.store.Lister.List(ctx, config(req.GetConfig()), ListRequest{Prefix: req.GetPrefix(), Tags: req.GetTags(),
		PageToken: req.GetPageToken(), Limit: int(req.GetLimit())})
	if err != nil {
		return nil, fail(err)
	}
	if n := len(page.Items); req.GetLimit() > 0 && n > int(req.GetLimit()) {
		return nil, status.Errorf(codes.Internal, "the plugin's list page holds %d items, over the %d asked", n, req.GetLimit())
	}
	out := &pluginv1.ListResponse{NextPageToken: page.NextPageToken, Items: make([]*pluginv1.ListItem, 0, len(page.Items))}
	for _, it := range page.Items {
		out.Items = append(out.Items, &pluginv1.ListItem{Key: it.Key, Version: it.Version, Tags: it.Tags})
	}
	return out, nil
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
