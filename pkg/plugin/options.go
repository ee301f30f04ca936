package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Option changes how Serve and ServeListener serve.
type Option func(*serveOptions) error

type serveOptions struct {
	tls             *tls.Config
	logger          *slog.Logger
	shutdownTimeout time.Duration
}

func options(opts []Option) (serveOptions, error) {
	o := serveOptions{logger: slog.Default(), shutdownTimeout: ShutdownTimeout}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// TLSFiles are the PEM files of a plugin's mutual TLS: the CA that signed
// the client certificates it accepts (Watchword's), and its own server
// certificate and key. They are read once, when serving starts.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
}

// WithTLS serves with mutual TLS: the plugin presents CertFile and
// KeyFile, and accepts only clients whose certificate chains to CAFile.
func WithTLS(files TLSFiles) Option {
	return func(o *serveOptions) error {
		cfg, err := ServerTLSConfig(files)
		if err != nil {
			return err
		}
		o.tls = cfg
		return nil
	}
}

// WithTLSConfig serves with a TLS configuration of the caller's; it
// should require and verify client certificates, as WithTLS does.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(o *serveOptions) error {
		if cfg == nil {
			return errors.New("WithTLSConfig: nil configuration")
		}
		o.tls = cfg
		return nil
	}
}

// WithLogger logs through l instead of slog.Default(). The SDK logs when
// it starts and stops serving, each call at debug level (its method and
// status code; a Watch stream when it opens, and when it ends with its
// status code, duration and the number of changes it told), and calls
// that failed with no class of the protocol (status Unknown or Internal)
// at warning level with their message: an error's message names keys,
// never a value.
func WithLogger(l *slog.Logger) Option {
	return func(o *serveOptions) error {
		if l == nil {
			return errors.New("WithLogger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithShutdownTimeout changes how long a shutdown lets calls under way
// finish (ShutdownTimeout by default).
func WithShutdownTimeout(d time.Duration) Option {
	return func(o *serveOptions) error {
		if d <= 0 {
			return fmt.Errorf("WithShutdownTimeout(%s): use a duration above 0", d)
		}
		o.shutdownTimeout = d
		return nil
	}
}

// ServerTLSConfig is the TLS configuration WithTLS serves with: TLS 1.2 or
// later, the server certificate of files, and client certificates
// required and verified against files.CAFile.
func ServerTLSConfig(files TLSFiles) (*tls.Config, error) {
	if files.CAFile == "" || files.CertFile == "" || files.KeyFile == "" {
		return nil, errors.New("mutual TLS needs a CA file, a certificate file and a key file; one is missing")
	}
	caPEM, err := os.ReadFile(files.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("the CA file %s holds no PEM certificate", files.CAFile)
	}
	pair, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the server certificate and key: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}

// logCalls logs every call at debug level, and failures without a class
// at warning level.
func logCalls(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		st := status.Convert(err)
		switch st.Code() {
		case codes.Unknown, codes.Internal:
			log.WarnContext(ctx, "call failed with no error class of the protocol", "method", info.FullMethod, "code", st.Code().String(), "message", st.Message())
		default:
			log.DebugContext(ctx, "call", "method", info.FullMethod, "code", st.Code().String(), "duration", time.Since(start))
		}
		return resp, err
	}
}

// logStreams logs every stream (Watch) at debug level when it opens and
// when it ends, with the number of messages it sent, and a stream that
// failed without a class at warning level.
func logStreams(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		start := time.Now()
		log.DebugContext(ctx, "stream opened", "method", info.FullMethod)
		counted := &countingStream{ServerStream: ss}
		err := handler(srv, counted)
		st := status.Convert(err)
		switch st.Code() {
		case codes.Unknown, codes.Internal:
			log.WarnContext(ctx, "stream failed with no error class of the protocol", "method", info.FullMethod, "code", st.Code().String(), "message", st.Message(), "sent", counted.sent.Load())
		default:
			log.DebugContext(ctx, "stream ended", "method", info.FullMethod, "code", st.Code().String(), "duration", time.Since(start), "sent", counted.sent.Load())
		}
		return err
	}
}

// countingStream counts the messages a stream sends.
type countingStream struct {
	grpc.ServerStream
	sent atomic.Int64
}

func (s *countingStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err == nil {
		s.sent.Add(1)
	}
	return err
}

// Flags are the command-line flags of a plugin built with Main: where it
// listens, its TLS files, and its log level.
type Flags struct {
	Endpoint string
	TLS      TLSFiles
	LogLevel slog.Level
}

// Register adds the flags to fs: -endpoint (defaultEndpoint unless given),
// -tls-ca, -tls-cert, -tls-key and -log-level.
func (f *Flags) Register(fs *flag.FlagSet, defaultEndpoint string) {
	fs.StringVar(&f.Endpoint, "endpoint", defaultEndpoint, "where to listen: unix:///path.sock, or tcp://host:port (needs -tls-ca, -tls-cert and -tls-key)")
	fs.StringVar(&f.TLS.CAFile, "tls-ca", "", "PEM CA file that client certificates must chain to (mutual TLS)")
	fs.StringVar(&f.TLS.CertFile, "tls-cert", "", "PEM server certificate file (mutual TLS)")
	fs.StringVar(&f.TLS.KeyFile, "tls-key", "", "PEM server key file (mutual TLS)")
	fs.TextVar(&f.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
}

// Options are the Serve options the flags ask for: TLS when any TLS file
// is given, and a text logger on standard error at the log level.
func (f *Flags) Options() []Option {
	opts := []Option{WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: f.LogLevel})))}
	if f.TLS != (TLSFiles{}) {
		opts = append(opts, WithTLS(f.TLS))
	}
	return opts
}

// Main is the whole main function of a plugin: it parses the command
// line's Flags (defaultEndpoint unless -endpoint is given), serves store
// until SIGTERM or an interrupt, shuts down gracefully, and exits with
// status 1 on an error.
func Main(store Store, defaultEndpoint string) {
	var f Flags
	f.Register(flag.CommandLine, defaultEndpoint)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Serve(ctx, f.Endpoint, store, f.Options()...)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
