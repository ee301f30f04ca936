package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/cli"
	"github.com/watchword-dev/watchword/internal/operator"
)

// templateConfig is `watchword template`'s.
type templateConfig struct {
	ExternalSecret, Data string
	ConfigMaps           multiFlag
	ShowValues           bool
	// Live reads the data from the ExternalSecret's store instead of Data,
	// with the kubeconfig's identity; Namespace is the ExternalSecret's
	// when its manifest names none.
	Live                  bool
	Kubeconfig, Namespace string
	// Name, with Live, reads the ExternalSecret from the cluster instead
	// of a file.
	Name string
}

// multiFlag is a flag that may be given more than once.
type multiFlag []string

func (m *multiFlag) String() string     { return fmt.Sprint([]string(*m)) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseTemplate(args []string, out io.Writer) (templateConfig, error) {
	var c templateConfig
	fs := newFlagSet("template", "template (-f EXTERNALSECRET.yaml (--data SAMPLES.yaml | --live) | --live --name NAME) [-n NS] [--kubeconfig FILE] [--configmap CM.yaml]… [--show-values]", out)
	fs.StringVar(&c.ExternalSecret, "f", "", "the ExternalSecret manifest to render")
	fs.StringVar(&c.Data, "data", "", "sample remote data: a YAML map of remote key to a string or a map of fields")
	fs.BoolVar(&c.Live, "live", false, "instead of --data: read the data from the store the ExternalSecret names, in the cluster (read-only)")
	fs.StringVar(&c.Name, "name", "", "--live: instead of -f, the ExternalSecret of the cluster to render (its spec as stored)")
	fs.StringVar(&c.Namespace, "n", "", "--live: the ExternalSecret's namespace when its manifest has none, or that of --name (default: the kubeconfig context's)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "--live: kubeconfig file (default: $KUBECONFIG or ~/.kube/config, as kubectl)")
	fs.Var(&c.ConfigMaps, "configmap", "a ConfigMap manifest that templateFrom names (repeat for more); with --live, the others are read from the cluster")
	fs.BoolVar(&c.ShowValues, "show-values", false, "print the rendered values (without it, only keys and sizes)")
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	switch {
	case c.Name != "" && (!c.Live || c.ExternalSecret != ""):
		return c, errors.New("--name is for --live, instead of -f: give one")
	case c.ExternalSecret == "" && c.Name == "":
		return c, errors.New("-f is needed: the ExternalSecret manifest to render (or --live --name NAME for one of the cluster)")
	case c.Live && c.Data != "":
		return c, errors.New("--data and --live together: give sample data, or read the store with --live")
	case !c.Live && c.Data == "":
		return c, errors.New("--data is needed (the sample data to render with), or --live to read the ExternalSecret's store")
	case !c.Live && (c.Namespace != "" || c.Kubeconfig != ""):
		return c, errors.New("-n and --kubeconfig are for --live")
	}
	if c.Kubeconfig != "" {
		if err := checkKubeconfig(c.Kubeconfig); err != nil {
			return c, err
		}
	}
	return c, nil
}

func runTemplate(ctx context.Context, c templateConfig, out io.Writer) error {
	in := cli.TemplateInput{ShowValues: c.ShowValues}
	var err error
	if c.ExternalSecret != "" {
		if in.ExternalSecret, err = os.ReadFile(c.ExternalSecret); err != nil {
			return err
		}
	}
	for _, f := range c.ConfigMaps {
		b, rerr := os.ReadFile(f)
		if rerr != nil {
			return rerr
		}
		in.ConfigMaps = append(in.ConfigMaps, b)
	}
	if c.Live {
		return runTemplateLive(ctx, c, in, out)
	}
	if in.Data, err = os.ReadFile(c.Data); err != nil {
		return err
	}
	return cli.Template(in, out)
}

// runTemplateLive renders with the data of the ExternalSecret's store,
// whose client is built as the controller builds it, with the
// kubeconfig's identity.
func runTemplateLive(ctx context.Context, c templateConfig, in cli.TemplateInput, out io.Writer) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.Kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns := c.Namespace
	if ns == "" {
		if ns, _, err = loader.Namespace(); err != nil {
			return fmt.Errorf("the kubeconfig's namespace: %w", err)
		}
	}
	k, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if c.Name != "" {
		if in.ExternalSecret, err = cli.StoredExternalSecret(ctx, k, ns, c.Name); err != nil {
			return err
		}
	}
	return cli.TemplateLive(ctx, cli.LiveTemplateInput{ExternalSecret: in.ExternalSecret, Namespace: ns, ConfigMaps: in.ConfigMaps,
		ShowValues: in.ShowValues}, cli.ClusterReader{Client: k, Kube: kube, Config: cfg, Registry: registry()}, out)
}

// statusConfig is `watchword status`'s.
type statusConfig struct {
	Kubeconfig, Namespace string
	All                   bool
	Watch                 bool
}

func parseStatus(args []string, out io.Writer) (statusConfig, error) {
	var c statusConfig
	fs := newFlagSet("status", "status [-n NAMESPACE | -A] [--watch] [--kubeconfig FILE]", out)
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config, as kubectl)")
	fs.StringVar(&c.Namespace, "n", "", "namespace (default: the kubeconfig context's)")
	fs.BoolVar(&c.All, "A", false, "every namespace")
	fs.BoolVar(&c.Watch, "watch", false, "after the table, print a line for each one that appears, goes or changes, until interrupted")
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	if c.All && c.Namespace != "" {
		return c, errors.New("-n and -A together: give one")
	}
	if c.Kubeconfig != "" {
		if err := checkKubeconfig(c.Kubeconfig); err != nil {
			return c, err
		}
	}
	return c, nil
}

// errFailing makes `watchword status` exit 1 when something is not Ready.
var errFailing = errors.New("some are not Ready")

func runStatus(ctx context.Context, c statusConfig, out io.Writer) error {
	k, ns, err := clusterClient(c)
	if err != nil {
		return err
	}
	var rows []cli.StatusRow
	if c.Watch {
		// Until interrupted; the exit code tells how things are then.
		if rows, err = cli.WatchStatus(ctx, k, ns, time.Now, out); err != nil {
			return err
		}
	} else {
		if rows, err = cli.Status(ctx, k, ns); err != nil {
			return err
		}
		if err := cli.PrintStatus(out, rows, time.Now()); err != nil {
			return err
		}
	}
	for _, r := range rows {
		if r.Failing() {
			return errFailing
		}
	}
	return nil
}

// refreshConfig is `watchword refresh`'s.
type refreshConfig struct {
	statusConfig
	Names   []string
	Timeout time.Duration
}

func parseRefresh(args []string, out io.Writer) (refreshConfig, error) {
	var c refreshConfig
	fs := newFlagSet("refresh", "refresh [-n NAMESPACE] [--timeout 30s] [--kubeconfig FILE] (NAME… | --all)", out)
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config, as kubectl)")
	fs.StringVar(&c.Namespace, "n", "", "namespace (default: the kubeconfig context's)")
	all := fs.Bool("all", false, "every ExternalSecret of the namespace")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Second, "how long to wait for the outcome")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, reportedError{err}
	}
	c.Names = fs.Args()
	for _, n := range c.Names {
		if strings.HasPrefix(n, "-") {
			return c, fmt.Errorf("%q after a name: give the flags before the names", n)
		}
	}
	switch {
	case *all && len(c.Names) > 0:
		return c, errors.New("names and --all together: give one")
	case !*all && len(c.Names) == 0:
		return c, errors.New("name the ExternalSecrets to refresh, or give --all")
	case c.Timeout <= 0:
		return c, fmt.Errorf("--timeout %s: use a duration above 0, such as 30s", c.Timeout)
	}
	if c.Kubeconfig != "" {
		if err := checkKubeconfig(c.Kubeconfig); err != nil {
			return c, err
		}
	}
	return c, nil
}

func runRefresh(ctx context.Context, c refreshConfig, out io.Writer) error {
	k, ns, err := clusterClient(c.statusConfig)
	if err != nil {
		return err
	}
	return cli.Refresh(ctx, k, ns, c.Names, c.Timeout, time.Now, out)
}

// clusterClient is a client of the cluster the kubeconfig names, found as
// kubectl finds it, and the namespace to work in.
func clusterClient(c statusConfig) (client.WithWatch, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.Kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns := c.Namespace
	if ns == "" && !c.All {
		if ns, _, err = loader.Namespace(); err != nil {
			return nil, "", fmt.Errorf("the kubeconfig's namespace: %w", err)
		}
	}
	k, err := client.NewWithWatch(cfg, client.Options{Scheme: operator.Scheme()})
	return k, ns, err
}

// convertConfig is `watchword convert`'s.
type convertConfig struct {
	Files  multiFlag
	Output string
}

func parseConvert(args []string, out io.Writer) (convertConfig, error) {
	var c convertConfig
	fs := newFlagSet("convert", "convert -f FILE|DIR|- [-f …] [-o OUT.yaml]", out)
	fs.Var(&c.Files, "f", "External Secrets Operator manifests: a file, a directory (its .yaml, .yml and .json files, recursively) or - for stdin (repeat for more)")
	fs.StringVar(&c.Output, "o", "", "write the converted manifests to this file (default: stdout)")
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	if len(c.Files) == 0 {
		return c, errors.New("-f is needed: the manifests to convert")
	}
	return c, nil
}

// Exit codes of `watchword convert`: 0 when everything was carried,
// exitConvertDropped when some settings were not (the findings on stderr
// say which), 1 on an error, 2 for bad flags.
const exitConvertDropped = 3

// errDropped makes `watchword convert` exit exitConvertDropped.
var errDropped = errors.New("some settings were not carried")

func runConvert(c convertConfig, stdin io.Reader, stdout, stderr io.Writer) error {
	var inputs []cli.ConvertInput
	for _, f := range c.Files {
		in, err := cli.ReadConvertInputs(f, stdin)
		if err != nil {
			return err
		}
		inputs = append(inputs, in...)
	}
	res, err := cli.Convert(inputs)
	if err != nil {
		return err
	}
	out := stdout
	if c.Output != "" {
		if err := os.WriteFile(c.Output, res.Output, 0o600); err != nil {
			return err
		}
	} else if _, err := out.Write(res.Output); err != nil {
		return err
	}
	cli.PrintFindings(stderr, res.Findings)
	if res.Dropped() {
		return errDropped
	}
	return nil
}
