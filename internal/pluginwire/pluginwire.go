// Package pluginwire is what both ends of the plugin protocol
// (api/plugin/v1) share: the protocol version, the limits, and the mapping
// between the engine's error classes and gRPC status codes. The plugin
// provider (internal/provider/plugin) is the client end, the SDK
// (pkg/plugin) the server end.
package pluginwire

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// The versions of api/plugin this build speaks. v1.1 is v1 with the List
// call: a plugin that chose v1 cannot list, whatever it announced, so that
// a plugin built before List keeps working and says it cannot list.
const (
	ProtocolVersion     = "v1"
	ProtocolVersionList = "v1.1"
)

// ProtocolVersions are the versions this build speaks, newest first: what
// Watchword offers at a handshake.
var ProtocolVersions = []string{ProtocolVersionList, ProtocolVersion}

// ChooseVersion is the newest version of this build that offered holds,
// or "" when it holds none: what a plugin answers a handshake with.
func ChooseVersion(offered []string) string {
	for _, v := range ProtocolVersions {
		for _, o := range offered {
			if o == v {
				return v
			}
		}
	}
	return ""
}

// Speaks tells whether this build speaks version v.
func Speaks(v string) bool {
	return v == ProtocolVersion || v == ProtocolVersionList
}

// ForVersion is the part of capabilities c that protocol version v can
// carry: v1 has no List call.
func ForVersion(v string, c engine.Capabilities) engine.Capabilities {
	if v != ProtocolVersionList {
		return c &^ engine.CanList
	}
	return c
}

// MaxListLimit is the largest page a listing asks a plugin for, and the
// largest a plugin built with the SDK accepts to be asked for.
const MaxListLimit = 1000

// MaxMessageSize bounds every message either end sends or receives.
const MaxMessageSize = 4 << 20

// UnixScheme starts the endpoint of a plugin on a unix socket, the
// default.
const UnixScheme = "unix://"

// SocketPath returns the path of a unix:// endpoint, or an error wrapping
// engine.ErrInvalidConfig that says what an endpoint looks like.
func SocketPath(endpoint string) (string, error) {
	path, ok := strings.CutPrefix(endpoint, UnixScheme)
	if !ok || !strings.HasPrefix(path, "/") || len(path) < 2 {
		return "", fmt.Errorf("endpoint %q is not a unix socket with an absolute path, such as unix:///run/watchword/store.sock, nor tcp://host:port: %w", endpoint, engine.ErrInvalidConfig)
	}
	return path, nil
}

// retryAfter is implemented by errors that say when to try again.
type retryAfter interface{ RetryAfter() time.Duration }

// Throttled returns an error of class engine.ErrThrottled that asks to
// retry after d; a plugin returns it when its store asks to slow down.
func Throttled(d time.Duration, format string, args ...any) error {
	return &throttled{msg: fmt.Sprintf(format, args...), after: d}
}

type throttled struct {
	msg   string
	after time.Duration
}

func (e *throttled) Error() string             { return e.msg }
func (e *throttled) Unwrap() error             { return engine.ErrThrottled }
func (e *throttled) RetryAfter() time.Duration { return e.after }

// codeOf is the status code of each class, in the order they are tested.
var codeOf = []struct {
	class error
	code  codes.Code
}{
	{engine.ErrNotFound, codes.NotFound},
	// Before ErrPermissionDenied, which it wraps.
	{engine.ErrUnauthenticated, codes.Unauthenticated},
	{engine.ErrPermissionDenied, codes.PermissionDenied},
	{engine.ErrUnavailable, codes.Unavailable},
	{engine.ErrThrottled, codes.ResourceExhausted},
	{engine.ErrInvalidConfig, codes.InvalidArgument},
	{engine.ErrNotOwned, codes.AlreadyExists},
	{engine.ErrNotSupported, codes.Unimplemented},
}

// Status turns an error of a plugin into the status it returns: the code
// of its class (Unknown for none) and its message, with a RetryInfo detail
// for a throttled error that says when to retry.
func Status(err error) *status.Status {
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return s
	}
	code := codes.Unknown
	for _, c := range codeOf {
		if errors.Is(err, c.class) {
			code = c.code
			break
		}
	}
	st := status.New(code, err.Error())
	var ra retryAfter
	if code == codes.ResourceExhausted && errors.As(err, &ra) && ra.RetryAfter() > 0 {
		if withInfo, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(ra.RetryAfter())}); derr == nil {
			st = withInfo
		}
	}
	return st
}

// Error turns the status of a failed call (what, such as `reading key
// "db"`) into an error of the engine's class for its code, with the
// plugin's message. An error that is no status (the connection broke) is
// ErrUnavailable.
func Error(plugin, what string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("plugin %s: %s: %v: %w", plugin, what, err, engine.ErrUnavailable)
	}
	if st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "message larger than max") {
		// gRPC's own refusal of a message over the limit, on either
		// end: not the store asking to slow down.
		return fmt.Errorf("plugin %s: %s: a message exceeds the limit of %d MiB", plugin, what, MaxMessageSize>>20)
	}
	class := classOf(st.Code())
	msg := st.Message()
	if st.Code() == codes.ResourceExhausted {
		for _, d := range st.Details() {
			if ri, isRI := d.(*errdetails.RetryInfo); isRI && ri.GetRetryDelay() != nil && ri.GetRetryDelay().AsDuration() > 0 {
				// The store's gate holds the store this long.
				return engine.ThrottledFor(ri.GetRetryDelay().AsDuration(), fmt.Sprintf("plugin %s: %s: %s", plugin, what, msg))
			}
		}
	}
	if class == nil {
		return fmt.Errorf("plugin %s: %s: %s: %s", plugin, what, st.Code(), msg)
	}
	// The text of the class ends the message once: a plugin's message
	// that ends with it already (a Go plugin's error wraps the class
	// with %w) does not say it twice, and one that says nothing else adds
	// nothing.
	msg = strings.TrimSuffix(msg, ": "+class.Error())
	if msg == "" || msg == class.Error() {
		return fmt.Errorf("plugin %s: %s: %w", plugin, what, class)
	}
	return fmt.Errorf("plugin %s: %s: %s: %w", plugin, what, msg, class)
}

func classOf(c codes.Code) error {
	switch c {
	case codes.NotFound:
		return engine.ErrNotFound
	case codes.Unauthenticated:
		return engine.ErrUnauthenticated
	case codes.PermissionDenied:
		return engine.ErrPermissionDenied
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return engine.ErrUnavailable
	case codes.ResourceExhausted:
		return engine.ErrThrottled
	case codes.InvalidArgument, codes.FailedPrecondition:
		return engine.ErrInvalidConfig
	case codes.AlreadyExists:
		return engine.ErrNotOwned
	case codes.Unimplemented:
		return engine.ErrNotSupported
	default:
		return nil
	}
}

// Capabilities turns the capabilities a plugin announced into the
// engine's set.
func Capabilities(cs []pluginv1.Capability) engine.Capabilities {
	var out engine.Capabilities
	for _, c := range cs {
		switch c {
		case pluginv1.Capability_CAPABILITY_READ:
			out |= engine.CanRead
		case pluginv1.Capability_CAPABILITY_BATCH_READ:
			out |= engine.CanBatchRead
		case pluginv1.Capability_CAPABILITY_VERSION_CHECK:
			out |= engine.CanCheckVersion
		case pluginv1.Capability_CAPABILITY_LIST:
			out |= engine.CanList
		case pluginv1.Capability_CAPABILITY_WRITE:
			out |= engine.CanWrite
		case pluginv1.Capability_CAPABILITY_DELETE:
			out |= engine.CanDelete
		case pluginv1.Capability_CAPABILITY_WATCH:
			out |= engine.CanWatch
		}
	}
	return out
}

// CapabilityList is the inverse of Capabilities.
func CapabilityList(c engine.Capabilities) []pluginv1.Capability {
	var out []pluginv1.Capability
	for _, m := range []struct {
		c engine.Capabilities
		p pluginv1.Capability
	}{
		{engine.CanRead, pluginv1.Capability_CAPABILITY_READ},
		{engine.CanBatchRead, pluginv1.Capability_CAPABILITY_BATCH_READ},
		{engine.CanCheckVersion, pluginv1.Capability_CAPABILITY_VERSION_CHECK},
		{engine.CanList, pluginv1.Capability_CAPABILITY_LIST},
		{engine.CanWrite, pluginv1.Capability_CAPABILITY_WRITE},
		{engine.CanDelete, pluginv1.Capability_CAPABILITY_DELETE},
		{engine.CanWatch, pluginv1.Capability_CAPABILITY_WATCH},
	} {
		if c.Has(m.c) {
			out = append(out, m.p)
		}
	}
	return out
}
