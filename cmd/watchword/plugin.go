package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/pluginwire"
	"github.com/watchword-dev/watchword/pkg/conformance"
)

// conformanceConfig is `watchword plugin conformance`'s.
type conformanceConfig struct {
	Endpoint               string
	TLSCA, TLSCert, TLSKey string
	ServerName             string
	Config                 map[string]string
	WritePrefix            string
	KeepsVersions          bool
	Timeout                time.Duration
}

const pluginUsage = `Usage: watchword plugin conformance --endpoint unix:///path.sock|tcp://host:port [flags]

Runs the conformance suite against a running store plugin.
Run "watchword plugin conformance -h" for the flags.
`

func parsePluginConformance(args []string, out io.Writer) (conformanceConfig, error) {
	var c conformanceConfig
	fs := newFlagSet("plugin conformance",
		"plugin conformance --endpoint unix:///path.sock|tcp://host:port [--tls-ca F --tls-cert F --tls-key F [--server-name N]] [--config JSON] [--write-prefix P] [--keeps-versions]", out)
	fs.StringVar(&c.Endpoint, "endpoint", "", "the plugin's endpoint: unix:///path.sock, or tcp://host:port with the --tls-* flags")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "tcp://: PEM file of the CA the plugin's certificate chains to")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "tcp://: PEM file of the client certificate to present")
	fs.StringVar(&c.TLSKey, "tls-key", "", "tcp://: PEM file of the client certificate's key")
	fs.StringVar(&c.ServerName, "server-name", "", "tcp://: the name the plugin's certificate holds (default: the endpoint's host)")
	config := fs.String("config", "", `the store's plugin config, as a JSON object of strings, such as {"partition":"test"}`)
	fs.StringVar(&c.WritePrefix, "write-prefix", "", "run the write checks, on keys that start with this prefix and hold nothing yet (without it, a plugin that can write is only read)")
	fs.BoolVar(&c.KeepsVersions, "keeps-versions", false, "the plugin keeps replaced versions readable (without it, a pinned read of a replaced version must be not found)")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Second, "bound of each call to the plugin")
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	ep, err := pluginwire.ParseEndpoint(c.Endpoint)
	switch {
	case c.Endpoint == "":
		return c, errors.New("--endpoint is needed: the plugin's unix:///path.sock or tcp://host:port")
	case err != nil:
		return c, fmt.Errorf("--endpoint: %s", strings.TrimSuffix(err.Error(), ": "+engine.ErrInvalidConfig.Error()))
	case ep.TCP() && (c.TLSCA == "" || c.TLSCert == "" || c.TLSKey == ""):
		return c, errors.New("a tcp:// endpoint is reached only over mutual TLS: give --tls-ca, --tls-cert and --tls-key")
	case !ep.TCP() && (c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != "" || c.ServerName != ""):
		return c, errors.New("the --tls-* flags and --server-name are for tcp:// endpoints; a unix socket takes none")
	case c.Timeout <= 0:
		return c, fmt.Errorf("--timeout %s: use a duration above 0, such as 10s", c.Timeout)
	}
	if *config != "" {
		if err := json.Unmarshal([]byte(*config), &c.Config); err != nil {
			return c, fmt.Errorf(`--config is not a JSON object of strings, such as {"partition":"test"}: %w`, err)
		}
	}
	return c, nil
}

// runPluginConformance runs the suite against the plugin and prints one
// line per check; a failed check makes it return conformance.ErrFailed.
func runPluginConformance(ctx context.Context, c conformanceConfig, out io.Writer) error {
	var ops engine.Ops
	var err error
	if c.TLSCA != "" {
		ops, err = dialTLS(ctx, c)
	} else {
		ops, err = conformance.DialPlugin(ctx, c.Endpoint, c.Config)
	}
	if err != nil {
		return fmt.Errorf("connecting to the plugin: %w", err)
	}
	defer func() { _ = ops.Closer.Close() }()
	_, _ = fmt.Fprintf(out, "plugin at %s: capabilities %s\n", c.Endpoint, ops.Capabilities())
	h := conformance.Harness{Name: c.Endpoint, Ops: ops, Timeout: c.Timeout, KeepsVersions: c.KeepsVersions}
	if c.WritePrefix == "" {
		h.SkipWrites = "the suite writes only when given --write-prefix (keys under a prefix that hold nothing yet)"
	} else {
		prefix := c.WritePrefix
		h.Key = func(name string) string { return prefix + name }
		if ops.Writer != nil {
			// No protocol call writes a secret without a marker: the
			// read checks seed through the plugin's own writer, as an
			// owner the write checks never act as.
			h.SeedMarks = true
			h.Seed = func(ctx context.Context, key string, fields map[string][]byte) error {
				_, err := ops.Writer.PutSecret(ctx, key, engine.Publication{Fields: fields}, engine.Owner{ID: "conformance/seed"})
				return err
			}
		}
	}
	return conformance.Print(out, h)
}

func dialTLS(ctx context.Context, c conformanceConfig) (engine.Ops, error) {
	var pems [3][]byte
	for i, f := range []string{c.TLSCA, c.TLSCert, c.TLSKey} {
		b, err := os.ReadFile(f)
		if err != nil {
			return engine.Ops{}, err
		}
		pems[i] = b
	}
	serverName := c.ServerName
	if serverName == "" {
		ep, _ := pluginwire.ParseEndpoint(c.Endpoint)
		serverName = ep.Host()
	}
	tlsCfg, err := conformance.ClientTLS(pems[0], pems[1], pems[2], serverName)
	if err != nil {
		return engine.Ops{}, err
	}
	return conformance.DialPluginTLS(ctx, c.Endpoint, c.Config, tlsCfg)
}
