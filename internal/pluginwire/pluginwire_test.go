package pluginwire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// TestClassesSurviveTheWire: an error a plugin returns reaches the engine
// with its class and its message.
func TestClassesSurviveTheWire(t *testing.T) {
	for _, c := range codeOf {
		t.Run(c.class.Error(), func(t *testing.T) {
			st := Status(fmt.Errorf("key %q: %w", "db", c.class))
			if st.Code() != c.code {
				t.Fatalf("code %s, want %s", st.Code(), c.code)
			}
			err := Error("memory at unix:///s.sock", `reading key "db"`, st.Err())
			if !errors.Is(err, c.class) {
				t.Fatalf("%v does not wrap %v", err, c.class)
			}
			if !strings.Contains(err.Error(), `key "db"`) || !strings.Contains(err.Error(), "plugin memory at unix:///s.sock") {
				t.Fatalf("message %q lost the plugin's words or its name", err)
			}
		})
	}
}

// TestTheClassIsSaidOnce: a plugin's message that ends with the text of
// its class (a Go plugin wraps the class with %w), or is nothing else,
// does not make the class's text appear twice.
func TestTheClassIsSaidOnce(t *testing.T) {
	for _, sent := range []error{
		fmt.Errorf("the environment variable is not set: %w", engine.ErrNotFound),
		engine.ErrNotFound,
		status.Error(codes.NotFound, ""),
	} {
		err := Error("env at unix:///s.sock", `reading key "db"`, Status(sent).Err())
		if !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("%v does not wrap ErrNotFound", err)
		}
		if n := strings.Count(err.Error(), engine.ErrNotFound.Error()); n != 1 {
			t.Errorf("%q says %q %d times, want once", err, engine.ErrNotFound.Error(), n)
		}
	}
}

func TestThrottledCarriesItsRetryHint(t *testing.T) {
	st := Status(Throttled(3*time.Second, "the store asks to slow down"))
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("code %s", st.Code())
	}
	err := Error("p", "reading", st.Err())
	if !errors.Is(err, engine.ErrThrottled) || !strings.Contains(err.Error(), "retry after 3s") {
		t.Fatalf("%v", err)
	}
	// The store's gate reads the hint: it holds the store that long.
	if d, ok := failure.RetryAfter(err); !ok || d != 3*time.Second {
		t.Fatalf("the plugin's RetryInfo reached the gate as %s, %v; want 3s", d, ok)
	}
}

func TestUnauthenticatedKeepsItsClassBothWays(t *testing.T) {
	st := Status(fmt.Errorf("reading key %q: %w", "db", engine.ErrUnauthenticated))
	if st.Code() != codes.Unauthenticated {
		t.Fatalf("a refusal of the credentials was sent as %s, want Unauthenticated", st.Code())
	}
	err := Error("p", "reading", st.Err())
	if !errors.Is(err, engine.ErrUnauthenticated) || failure.Classify(err).Reason != failure.PermissionDenied {
		t.Fatalf("Unauthenticated came back as %v (reason %s), want ErrUnauthenticated with reason PermissionDenied", err, failure.Classify(err).Reason)
	}
}

func TestCodesWithoutAClass(t *testing.T) {
	err := Error("p", "reading", status.Error(codes.Internal, "boom"))
	for _, c := range codeOf {
		if errors.Is(err, c.class) {
			t.Fatalf("an internal error became %v", c.class)
		}
	}
	if err = Error("p", "reading", errors.New("connection reset")); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("a broken connection: %v, want ErrUnavailable", err)
	}
	for _, code := range []codes.Code{codes.Unauthenticated, codes.DeadlineExceeded, codes.Aborted, codes.FailedPrecondition} {
		if classOf(code) == nil {
			t.Errorf("%s has no class", code)
		}
	}
}

func TestSocketPath(t *testing.T) {
	for _, tc := range []struct {
		endpoint, path string
	}{
		{"unix:///run/watchword/a.sock", "/run/watchword/a.sock"},
		{"unix://relative.sock", ""},
		{"tcp://127.0.0.1:9000", ""},
		{"/run/a.sock", ""},
		{"unix:///", ""},
	} {
		got, err := SocketPath(tc.endpoint)
		if got != tc.path || (tc.path == "") != errors.Is(err, engine.ErrInvalidConfig) {
			t.Errorf("SocketPath(%q) = %q, %v; want %q", tc.endpoint, got, err, tc.path)
		}
	}
}

func TestCapabilitiesRoundTrip(t *testing.T) {
	all := engine.CanRead | engine.CanBatchRead | engine.CanCheckVersion | engine.CanList | engine.CanWrite | engine.CanDelete | engine.CanWatch
	for _, c := range []engine.Capabilities{engine.CanRead, engine.CanRead | engine.CanWrite | engine.CanDelete, all} {
		if got := Capabilities(CapabilityList(c)); got != c {
			t.Errorf("%s came back as %s", c, got)
		}
	}
}
