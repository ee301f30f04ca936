package pluginwire

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// FuzzPluginStatus feeds a plugin's error answers to the client: a status
// of any code, message and retry delay, and raw bytes decoded as a status
// message with its details. Properties: no panic; the error has the class
// of its code; a positive retry delay of a throttling answer reaches the
// store's gate exactly; and the class survives a round trip through the
// plugin's side (Status).
func FuzzPluginStatus(f *testing.F) {
	f.Add(uint32(codes.ResourceExhausted), "slow down", int64(3*time.Second), []byte{})
	f.Add(uint32(codes.Unauthenticated), "token revoked", int64(0), []byte{})
	f.Add(uint32(codes.NotFound), "no such key", int64(-1), []byte{})
	f.Add(uint32(codes.ResourceExhausted), "message larger than max", int64(1), []byte{0x08, 0x08})
	raw, _ := proto.Marshal(&spb.Status{Code: int32(codes.ResourceExhausted), Message: "x", Details: []*anypb.Any{{TypeUrl: "type.googleapis.com/google.rpc.RetryInfo", Value: []byte{0x0a, 0x02, 0x08, 0x05}}}})
	f.Add(uint32(0), "", int64(0), raw)
	f.Fuzz(func(t *testing.T, code uint32, msg string, delay int64, raw []byte) {
		code %= 17
		st := status.New(codes.Code(code), msg)
		if delay != 0 {
			if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(delay))}); err == nil {
				st = withInfo
			}
		}
		if code == uint32(codes.OK) {
			return
		}
		err := Error("p", "reading", st.Err())
		if err == nil {
			t.Fatal("a failed call gave no error")
		}
		class := classOf(codes.Code(code))
		tooBig := codes.Code(code) == codes.ResourceExhausted && containsTooBig(msg)
		if class != nil && !tooBig && !errors.Is(err, class) {
			t.Fatalf("code %s gave %v, want class %v", codes.Code(code), err, class)
		}
		d, ok := failure.RetryAfter(err)
		if codes.Code(code) == codes.ResourceExhausted && !tooBig && delay > 0 && (!ok || d != time.Duration(delay)) {
			t.Fatalf("retry delay %s reached the gate as %s, %v", time.Duration(delay), d, ok)
		}
		if class != nil && !tooBig {
			if back := Status(err); classOf(back.Code()) != class && !(class == engine.ErrUnauthenticated && back.Code() == codes.Unauthenticated) {
				t.Fatalf("code %s came back as %s", codes.Code(code), back.Code())
			}
		}

		var sp spb.Status
		if proto.Unmarshal(raw, &sp) != nil || sp.Code == 0 {
			return
		}
		_ = Error("p", "reading", status.FromProto(&sp).Err())
	})
}

func containsTooBig(msg string) bool {
	return strings.Contains(msg, "message larger than max")
}

// FuzzParseEndpoint: a plugin endpoint that parses prints back to itself
// and parses again to the same endpoint; one that does not is an
// ErrInvalidConfig.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"unix:///run/watchword/store.sock", "tcp://plugin.example.svc:7443", "tcp://[::1]:7443", "unix://relative", "tcp://h:", "http://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEndpoint(s)
		if err != nil {
			if !errors.Is(err, engine.ErrInvalidConfig) {
				t.Fatalf("%q: error of no class: %v", s, err)
			}
			return
		}
		again, err := ParseEndpoint(e.String())
		if err != nil || again != e {
			t.Fatalf("%q parsed to %+v, which prints as %q and parses to %+v, %v", s, e, e.String(), again, err)
		}
	})
}
