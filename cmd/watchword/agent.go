package main

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/agent"
	"github.com/watchword-dev/watchword/internal/operator"
)

// agentConfig is what the flags of `watchword agent` ask for.
type agentConfig struct {
	Config     string
	Once       bool
	Addr       string
	Kubeconfig string
	Log        logConfig
}

func parseAgent(args []string, out io.Writer) (agentConfig, error) {
	var c agentConfig
	fs := newFlagSet("agent", "agent --config FILE [--once] [flags]", out)
	fs.StringVar(&c.Config, "config", "", "the agent's config file (AgentConfig, docs/agent.md); required")
	fs.BoolVar(&c.Once, "once", false, "deliver every directory once and exit: 0 when all were written, 1 with the reason otherwise (for init containers)")
	fs.StringVar(&c.Addr, "health-addr", "", "address for /healthz, /readyz and /metrics, such as :8081; empty serves none")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig for the kubernetes section; empty means in-cluster or $KUBECONFIG")
	addLogFlags(fs, &c.Log)
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	if c.Config == "" {
		return c, fmt.Errorf("--config is required")
	}
	return c, c.Log.validate()
}

func runAgent(ctx context.Context, c agentConfig) error {
	log := c.Log.logger()
	ctrl.SetLogger(log)
	cfg, err := agent.LoadConfig(c.Config)
	if err != nil {
		return err
	}
	opts := agent.Options{Registry: registry(), Log: log}
	if cfg.Kubernetes != nil {
		var rc *rest.Config
		if c.Kubeconfig != "" {
			rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
		} else {
			rc, err = ctrl.GetConfig()
		}
		if err != nil {
			return fmt.Errorf("loading the cluster configuration: %w", err)
		}
		k, kerr := client.New(rc, client.Options{Scheme: operator.Scheme()})
		if kerr != nil {
			return kerr
		}
		opts.Kube, opts.Local = k, rc
	}
	a, err := agent.New(cfg, opts)
	if err != nil {
		return err
	}
	if c.Once {
		return a.Once(ctx)
	}
	if c.Addr != "" {
		go func() {
			if err := agent.Serve(ctx, c.Addr, a, func(addr string) { log.Info("serving health and metrics", "address", addr) }); err != nil {
				log.Error(err, "health and metrics endpoint stopped")
			}
		}()
	}
	return a.Run(ctx)
}
