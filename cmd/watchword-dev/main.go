// Command watchword-dev runs Watchword on a local embedded control plane: a
// real etcd, kube-apiserver and kube-controller-manager on loopback, the
// CRDs, the operator in-process and the demo of examples/dev (`make dev`).
// It is a command of its own, apart from the operator's binary, because the
// control plane is started with controller-runtime's envtest, which is test
// code and must not be in the image (its init writes to /tmp, which a pod
// with a read-only root file system refuses).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/watchword-dev/watchword/internal/dev"
	"github.com/watchword-dev/watchword/internal/logging"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/internal/provider/builtin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o, level, console, err := parse(os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintf(os.Stderr, "error: %v\nRun \"watchword-dev -h\" for the flags.\n", err)
		os.Exit(2)
	}
	ctrl.SetLogger(logging.New(logging.Options{Level: level, Console: console}))
	if err := dev.Run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// logLevels are the values --log-level accepts, as for `watchword controller`.
var logLevels = map[string]zapcore.Level{"debug": zapcore.DebugLevel, "info": zapcore.InfoLevel, "error": zapcore.ErrorLevel}

// parse parses and checks the flags.
func parse(args []string, out io.Writer) (dev.Options, zapcore.Level, bool, error) {
	var o dev.Options
	var levelName string
	var console bool
	fs := flag.NewFlagSet("watchword-dev", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, "Usage: watchword-dev [flags]\n\nRuns etcd, kube-apiserver and kube-controller-manager on loopback, the operator and its demo.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.AssetsDir, "assets", "", "folder with kube-apiserver, etcd, kube-controller-manager and kubectl (default: $WATCHWORD_ASSETS or .cache/tools/bin of this repository)")
	fs.StringVar(&o.CRDDir, "crds", "", "folder of the CRD manifests (default: config/crd/bases of this repository)")
	fs.StringVar(&o.ExamplesDir, "examples", "", "folder of the demo manifests (default: examples/dev of this repository)")
	fs.StringVar(&o.WorkDir, "workdir", ".watchword-dev", "folder for the kubeconfig")
	fs.BoolVar(&o.ExitAfterDemo, "exit-after-demo", false, "exit 0 once the demo Secret is synced, non-zero otherwise")
	fs.DurationVar(&o.Timeout, "timeout", 0, "with --exit-after-demo: how long to wait for the sync (default 2m)")
	fs.StringVar(&levelName, "log-level", "info", "log level: debug, info or error")
	fs.BoolVar(&console, "log-console", false, "human-readable console logs instead of JSON")
	if err := fs.Parse(args); err != nil {
		return o, 0, false, err
	}
	if fs.NArg() > 0 {
		return o, 0, false, fmt.Errorf("unexpected argument %q: watchword-dev takes flags only", fs.Arg(0))
	}
	level, ok := logLevels[levelName]
	if !ok {
		return o, 0, false, fmt.Errorf("--log-level %q is not a log level: use debug, info or error", levelName)
	}
	if o.Timeout < 0 {
		return o, 0, false, fmt.Errorf("--timeout %s: use a duration above 0, such as 5m (0 means 2m)", o.Timeout)
	}
	if o.WorkDir == "" {
		return o, 0, false, errors.New("--workdir is empty: name a folder for the kubeconfig")
	}
	o.Operator = operator.DefaultOptions()
	o.Operator.Registry = builtin.Registry()
	o.Operator.MetricsAddr, o.Operator.HealthAddr = "0", "0"
	return o, level, console, nil
}
