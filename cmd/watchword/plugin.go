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

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/internal/pluginwire"
	"github.com/watchword-dev/watchword/internal/storeaccess"
	"github.com/watchword-dev/watchword/pkg/conformance"
)

// conformanceConfig is `watchword plugin conformance`'s.
type conformanceConfig struct {
	// Endpoint is a plugin's; Store and ClusterStore name a store of the
	// cluster instead (Namespace and Kubeconfig find it as kubectl does).
	Endpoint               string
	Store, ClusterStore    string
	Namespace, Kubeconfig  string
	TLSCA, TLSCert, TLSKey string
	ServerName             string
	Config                 map[string]string
	WritePrefix            string
	KeepsVersions          bool
	Timeout                time.Duration
}

const pluginUsage = `Usage: watchword plugin conformance --endpoint unix:///path.sock|tcp://host:port [flags]
       watchword conformance (--endpoint URL | --store NAME [-n NS] | --cluster-store NAME) [flags]

Runs the conformance suite against a running store plugin, or against a
SecretStore or ClusterSecretStore of the cluster (any provider).
Run "watchword conformance -h" for the flags.
`

func parsePluginConformance(args []string, out io.Writer) (conformanceConfig, error) {
	var c conformanceConfig
	fs := newFlagSet("conformance",
		"conformance (--endpoint unix:///path.sock|tcp://host:port [--tls-ca F --tls-cert F --tls-key F [--server-name N]] [--config JSON] | --store NAME [-n NS] | --cluster-store NAME [--kubeconfig F]) [--write-prefix P] [--keeps-versions]", out)
	fs.StringVar(&c.Endpoint, "endpoint", "", "the plugin's endpoint: unix:///path.sock, or tcp://host:port with the --tls-* flags")
	fs.StringVar(&c.Store, "store", "", "instead of --endpoint: the SecretStore of the cluster to check (its provider, with its credentials, as Watchword builds it)")
	fs.StringVar(&c.ClusterStore, "cluster-store", "", "instead of --endpoint: the ClusterSecretStore to check")
	fs.StringVar(&c.Namespace, "n", "", "--store: its namespace (default: the kubeconfig context's)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "--store, --cluster-store: kubeconfig file (default: $KUBECONFIG or ~/.kube/config, as kubectl)")
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
	if c.Store != "" || c.ClusterStore != "" {
		switch {
		case c.Endpoint != "" || (c.Store != "" && c.ClusterStore != ""):
			return c, errors.New("give one of --endpoint, --store and --cluster-store")
		case c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != "" || c.ServerName != "" || *config != "":
			return c, errors.New("the --tls-* flags, --server-name and --config are for --endpoint; a store of the cluster has them in its spec")
		case c.ClusterStore != "" && c.Namespace != "":
			return c, errors.New("-n is for --store; a ClusterSecretStore has no namespace")
		case c.Timeout <= 0:
			return c, fmt.Errorf("--timeout %s: use a duration above 0, such as 10s", c.Timeout)
		}
		return c, nil
	}
	ep, err := pluginwire.ParseEndpoint(c.Endpoint)
	switch {
	case c.Endpoint == "":
		return c, errors.New("--endpoint (a plugin's unix:///path.sock or tcp://host:port), --store or --cluster-store is needed")
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
	name := c.Endpoint
	switch {
	case c.Store != "" || c.ClusterStore != "":
		name, ops, err = clusterStoreOps(ctx, c)
		if err != nil {
			return err
		}
	case c.TLSCA != "":
		ops, err = dialTLS(ctx, c)
	default:
		ops, err = conformance.DialPlugin(ctx, c.Endpoint, c.Config)
	}
	if err != nil {
		return fmt.Errorf("connecting to the plugin: %w", err)
	}
	if ops.Closer != nil {
		defer func() { _ = ops.Closer.Close() }()
	}
	if c.Endpoint != "" {
		_, _ = fmt.Fprintf(out, "plugin at %s: capabilities %s\n", c.Endpoint, ops.Capabilities())
	} else {
		_, _ = fmt.Fprintf(out, "%s: capabilities %s\n", name, ops.Capabilities())
	}
	h := conformance.Harness{Name: name, Ops: ops, Timeout: c.Timeout, KeepsVersions: c.KeepsVersions}
	if c.WritePrefix == "" {
		h.SkipWrites = "the suite writes only when given --write-prefix (keys under a prefix that hold nothing yet)"
	} else {
		prefix := c.WritePrefix
		h.Key = func(name string) string { return prefix + name }
		if ops.Writer != nil {
			// No protocol call writes a secret without a marker (and a
			// store of the cluster is reached only through its
			// provider): the read checks seed through the store's own
			// writer, as an owner the write checks never act as, and
			// delete what they seeded as that owner once done.
			seeder := engine.Owner{ID: "conformance/seed"}
			h.SeedMarks = true
			h.Seed = func(ctx context.Context, key string, fields map[string][]byte) error {
				_, err := ops.Writer.PutSecret(ctx, key, engine.Publication{Fields: fields}, seeder)
				return err
			}
			h.Unseed = func(ctx context.Context, key string) error {
				return ops.Writer.DeleteSecret(ctx, key, seeder)
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

// clusterStoreOps builds the provider of a store of the cluster as the
// controller builds it: the store read from the API server, its
// credentials from the Secrets its spec names, with the kubeconfig's
// identity (which needs to read them, as the controller's does).
func clusterStoreOps(ctx context.Context, c conformanceConfig) (string, engine.Ops, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.Kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return "", engine.Ops{}, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	k, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return "", engine.Ops{}, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", engine.Ops{}, err
	}
	ns := c.Namespace
	ref := v1alpha1.StoreRef{Kind: v1alpha1.SecretStoreKind, Name: c.Store}
	if c.ClusterStore != "" {
		ref = v1alpha1.StoreRef{Kind: v1alpha1.ClusterSecretStoreKind, Name: c.ClusterStore}
	} else if ns == "" {
		if ns, _, err = loader.Namespace(); err != nil {
			return "", engine.Ops{}, fmt.Errorf("the kubeconfig's namespace: %w", err)
		}
	}
	var r *storeaccess.Resolved
	if c.ClusterStore != "" {
		var s v1alpha1.ClusterSecretStore
		if err = k.Get(ctx, client.ObjectKey{Name: c.ClusterStore}, &s); err != nil {
			return "", engine.Ops{}, fmt.Errorf("reading ClusterSecretStore %q: %w", c.ClusterStore, err)
		}
		r = storeaccess.FromClusterSecretStore(&s)
	} else if r, err = storeaccess.Resolve(ctx, k, ns, ref); err != nil {
		return "", engine.Ops{}, err
	}
	provider, ops, err := storeaccess.Ops(ctx, registry(), k, kube, cfg, r)
	if err != nil {
		return "", engine.Ops{}, fmt.Errorf("building the %s provider of %s: %w", provider, r.Describe(), err)
	}
	return r.Describe() + " (" + provider + ")", ops, nil
}
