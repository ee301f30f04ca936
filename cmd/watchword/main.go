// Command watchword is the Watchword operator: `watchword controller` runs
// it against a cluster, `watchword template`, `watchword status` and
// `watchword convert` help people with their resources, `watchword agent`
// delivers secrets as files, `watchword plugin
// conformance` checks a store plugin, and `watchword version` prints the
// version. The local development command, which runs a control plane
// with the operator, is cmd/watchword-dev: it links controller-runtime's
// envtest, which has no place in the image.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	// The zones of maintenance windows (CRON_TZ=Europe/Berlin) resolve
	// in images that carry no zone database.
	_ "time/tzdata"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/watchword-dev/watchword/internal/memlimit"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/builtin"
	"github.com/watchword-dev/watchword/internal/version"
	"github.com/watchword-dev/watchword/pkg/conformance"
)

// registry lists the providers of this build.
func registry() provider.Registry { return builtin.Registry() }

const usage = `watchword moves secrets between external stores and Kubernetes.

Usage:
  watchword controller [flags]   run the operator (in-cluster, or --kubeconfig FILE)
  watchword template [flags]     render an ExternalSecret's Secret offline from sample data
  watchword status [flags]       ExternalSecrets and PushSecrets, Ready or why not (exit 1 if any is not)
  watchword refresh [flags] NAME… sync ExternalSecrets now, bypassing every cache, and wait for the outcome
  watchword plugin conformance [flags]  run the conformance suite against a store plugin (exit 1 if it fails)
  watchword conformance [flags]  the same, against a plugin or a SecretStore/ClusterSecretStore of the cluster
  watchword agent --config FILE [--once]  deliver secrets as files into directories, atomically, and keep them fresh
  watchword convert [flags]      convert External Secrets Operator manifests (exit 3 if some settings were not carried)
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
	switch cmd := os.Args[1]; cmd {
	case "controller":
		c, perr := parseController(os.Args[2:], os.Stderr)
		exitOnFlagError(cmd, perr)
		err = runController(ctx, c)
	case "dev":
		// The local control plane is not part of the operator's binary.
		fmt.Fprintln(os.Stderr, "the local control plane and its demo are run by watchword-dev (make dev), not by the operator's binary")
		os.Exit(2)
	case "template":
		c, perr := parseTemplate(os.Args[2:], os.Stderr)
		exitOnFlagError(cmd, perr)
		err = runTemplate(ctx, c, os.Stdout)
	case "status":
		c, perr := parseStatus(os.Args[2:], os.Stderr)
		exitOnFlagError(cmd, perr)
		if err = runStatus(ctx, c, os.Stdout); errors.Is(err, errFailing) {
			os.Exit(1)
		}
	case "refresh":
		c, perr := parseRefresh(os.Args[2:], os.Stderr)
		exitOnFlagError(cmd, perr)
		err = runRefresh(ctx, c, os.Stdout)
	case "plugin", "conformance":
		args := os.Args[2:]
		if cmd == "plugin" {
			if len(os.Args) < 3 || os.Args[2] != "conformance" {
				fmt.Fprint(os.Stderr, pluginUsage)
				os.Exit(2)
			}
			args = os.Args[3:]
		}
		c, perr := parsePluginConformance(args, os.Stderr)
		exitOnFlagError("conformance", perr)
		if err = runPluginConformance(ctx, c, os.Stdout); errors.Is(err, conformance.ErrFailed) {
			os.Exit(1)
		}
	case "agent":
		c, perr := parseAgent(os.Args[2:], os.Stderr)
		exitOnFlagError(cmd, perr)
		err = runAgent(ctx, c)
	case "convert":
		c, perr := parseConvert(os.Args[2:], os.Stderr)
		exitOnFlagError(cmd, perr)
		if err = runConvert(c, os.Stdin, os.Stdout, os.Stderr); errors.Is(err, errDropped) {
			os.Exit(exitConvertDropped)
		}
	case "version", "--version", "-v":
		fmt.Println("watchword", version.Version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// exitOnFlagError ends the program when the flags of cmd were refused: 0
// after -h, 2 otherwise.
func exitOnFlagError(cmd string, err error) {
	var reported reportedError
	switch {
	case err == nil:
		return
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.As(err, &reported):
		// The flag package printed it, with the usage.
	default:
		fmt.Fprintf(os.Stderr, "error: %v\nRun \"watchword %s -h\" for the flags.\n", err, cmd)
	}
	os.Exit(2)
}

func runController(ctx context.Context, c controllerConfig) error {
	ctrl.SetLogger(c.Log.logger())
	if soft := memlimit.Apply(0.9); soft > 0 {
		ctrl.Log.Info("soft memory limit set to 90% of the container's", "bytes", soft)
	}
	var cfg *rest.Config
	var err error
	if c.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("loading the cluster configuration: %w", err)
	}
	op, err := operator.New(ctx, cfg, c.Operator)
	if err != nil {
		return err
	}
	return op.Start(ctx)
}
