package main

import (
	"io"
	"strings"
	"testing"
)

func TestParsePluginConformance(t *testing.T) {
	c, err := parsePluginConformance([]string{"--endpoint", "unix:///run/p.sock", "--config", `{"partition":"a"}`, "--write-prefix", "ww-"}, io.Discard)
	if err != nil || c.Config["partition"] != "a" || c.WritePrefix != "ww-" || c.Timeout <= 0 {
		t.Fatalf("parsePluginConformance = %+v, %v", c, err)
	}
	if c, err = parsePluginConformance([]string{"--store", "vault", "-n", "team-a", "--write-prefix", "ww-"}, io.Discard); err != nil || c.Store != "vault" || c.Namespace != "team-a" || c.Endpoint != "" {
		t.Errorf("--store: %+v, %v", c, err)
	}
	if _, err := parsePluginConformance([]string{"--endpoint", "tcp://p:7443", "--tls-ca", "ca", "--tls-cert", "c", "--tls-key", "k"}, io.Discard); err != nil {
		t.Errorf("tcp:// with TLS: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--store or --cluster-store is needed"},
		{[]string{"--store", "s", "--cluster-store", "c"}, "give one of --endpoint, --store and --cluster-store"},
		{[]string{"--store", "s", "--endpoint", "unix:///p.sock"}, "give one of --endpoint, --store and --cluster-store"},
		{[]string{"--store", "s", "--config", `{"a":"b"}`}, "a store of the cluster has them in its spec"},
		{[]string{"--cluster-store", "c", "-n", "team-a"}, "a ClusterSecretStore has no namespace"},
		{[]string{"--endpoint", "unix://relative.sock"}, "--endpoint: endpoint"},
		{[]string{"--endpoint", "tcp://p:7443"}, "give --tls-ca, --tls-cert and --tls-key"},
		{[]string{"--endpoint", "unix:///p.sock", "--tls-ca", "ca"}, "a unix socket takes none"},
		{[]string{"--endpoint", "unix:///p.sock", "--config", `{"a":1}`}, "--config is not a JSON object of strings"},
		{[]string{"--endpoint", "unix:///p.sock", "--timeout", "0s"}, "--timeout 0s"},
	} {
		if _, err := parsePluginConformance(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parsePluginConformance(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}
