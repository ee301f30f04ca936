package pluginwire

import (
	"errors"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
)

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		want     Endpoint
		target   string
	}{
		{"unix:///run/watchword/a.sock", Endpoint{"unix", "/run/watchword/a.sock"}, "unix:///run/watchword/a.sock"},
		{"tcp://127.0.0.1:9000", Endpoint{"tcp", "127.0.0.1:9000"}, "dns:///127.0.0.1:9000"},
		{"tcp://plugin.ns.svc:7443", Endpoint{"tcp", "plugin.ns.svc:7443"}, "dns:///plugin.ns.svc:7443"},
		{"tcp://[::1]:7443", Endpoint{"tcp", "[::1]:7443"}, "dns:///[::1]:7443"},
		{"tcp://plugin.ns.svc", Endpoint{}, ""},
		{"tcp://:7443", Endpoint{}, ""},
		{"tcp://host:7443/path", Endpoint{}, ""},
		{"unix://relative.sock", Endpoint{}, ""},
		{"http://host:80", Endpoint{}, ""},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			got, err := ParseEndpoint(tc.endpoint)
			if tc.want == (Endpoint{}) {
				if !errors.Is(err, engine.ErrInvalidConfig) {
					t.Fatalf("ParseEndpoint(%q) = %v, %v; want ErrInvalidConfig", tc.endpoint, got, err)
				}
				return
			}
			if err != nil || got != tc.want || got.Target() != tc.target || got.String() != tc.endpoint {
				t.Fatalf("ParseEndpoint(%q) = %+v (target %q), %v; want %+v (target %q)", tc.endpoint, got, got.Target(), err, tc.want, tc.target)
			}
		})
	}
	if h := (Endpoint{"tcp", "plugin.ns.svc:7443"}).Host(); h != "plugin.ns.svc" {
		t.Errorf("Host() = %q", h)
	}
}
