// Command watchword is the Watchword operator: `watchword controller` runs
// it against a cluster, `watchword dev` runs it on a local embedded control
// plane with a demo, and `watchword version` prints the version.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/watchword-dev/watchword/internal/dev"
	"github.com/watchword-dev/watchword/internal/memlimit"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/fake"
	"github.com/watchword-dev/watchword/internal/provider/kubernetes"
	"github.com/watchword-dev/watchword/internal/provider/vault"
	"github.com/watchword-dev/watchword/internal/version"
)

// registry lists the providers of this build. The API also knows awssm;
// stores that use it report that it is not implemented.
func registry() provider.Registry {
	return provider.Registry{
		"fake":       fake.Factory{},
		"kubernetes": kubernetes.Factory{},
		"vault":      vault.Factory{},
	}
}

const usage = `watchword moves secrets between external stores and Kubernetes.

Usage:
  watchword controller [flags]   run the operator (in-cluster, or --kubeconfig FILE)
  watchword dev [flags]          run a local control plane, the operator and a demo
  watchword version              print the version

Run "watchword COMMAND -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "controller":
		err = runController(ctx, os.Args[2:])
	case "dev":
		err = runDev(ctx, os.Args[2:])
	case "version", "--version", "-v":
		fmt.Println("watchword", version.Version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// logFlags adds --log-level and returns a function that builds the logger.
func logFlags(fs *flag.FlagSet) func() logr.Logger {
	level := fs.String("log-level", "info", "log level: debug, info or error")
	devMode := fs.Bool("log-console", false, "human-readable console logs instead of JSON")
	return func() logr.Logger {
		lvl := zapcore.InfoLevel
		switch *level {
		case "debug":
			lvl = zapcore.DebugLevel
		case "error":
			lvl = zapcore.ErrorLevel
		}
		return zap.New(zap.UseDevMode(*devMode), zap.Level(lvl))
	}
}

func operatorFlags(fs *flag.FlagSet) *operator.Options {
	o := operator.DefaultOptions()
	o.Registry = registry()
	fs.StringVar(&o.ControllerClass, "controller-class", "", "serve only stores whose spec.controller equals this (empty: stores without one)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "concurrent ExternalSecret reconciles")
	fs.Float64("kube-api-qps", float64(o.QPS), "requests per second to the API server")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "burst of requests to the API server")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address of the Prometheus metrics endpoint (0 disables)")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "address of the /healthz and /readyz endpoints (0 disables)")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "", "address of the Go profiling endpoints (empty disables)")
	fs.BoolVar(&o.LeaderElection, "leader-elect", false, "elect a leader among replicas")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease")
	return &o
}

func runController(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("controller", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster config, or $KUBECONFIG)")
	mkLog := logFlags(fs)
	opts := operatorFlags(fs)
	qps := fs.Lookup("kube-api-qps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var q float64
	if _, err := fmt.Sscan(qps.Value.String(), &q); err != nil {
		return fmt.Errorf("--kube-api-qps: %w", err)
	}
	opts.QPS = float32(q)
	ctrl.SetLogger(mkLog())
	if soft := memlimit.Apply(0.9); soft > 0 {
		ctrl.Log.Info("soft memory limit set to 90% of the container's", "bytes", soft)
	}
	if *kubeconfig != "" {
		os.Setenv("KUBECONFIG", *kubeconfig)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the cluster configuration: %w", err)
	}
	op, err := operator.New(ctx, cfg, *opts)
	if err != nil {
		return err
	}
	return op.Start(ctx)
}

func runDev(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ExitOnError)
	var o dev.Options
	fs.StringVar(&o.AssetsDir, "assets", "", "folder with kube-apiserver, etcd, kube-controller-manager and kubectl (default: $WATCHWORD_ASSETS or .cache/tools/bin of this repository)")
	fs.StringVar(&o.CRDDir, "crds", "", "folder of the CRD manifests (default: config/crd/bases of this repository)")
	fs.StringVar(&o.ExamplesDir, "examples", "", "folder of the demo manifests (default: examples/dev of this repository)")
	fs.StringVar(&o.WorkDir, "workdir", ".watchword-dev", "folder for the kubeconfig")
	fs.BoolVar(&o.ExitAfterDemo, "exit-after-demo", false, "exit 0 once the demo Secret is synced, non-zero otherwise")
	fs.DurationVar(&o.Timeout, "timeout", 0, "with --exit-after-demo: how long to wait for the sync (default 2m)")
	mkLog := logFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(mkLog())
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	o.Operator = opts
	return dev.Run(ctx, o, os.Stdout)
}
