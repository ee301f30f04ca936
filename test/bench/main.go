// Command bench measures Watchword against the physical limit of a real
// kube-apiserver and etcd on this machine, in one run: the raw Secret
// create rate of a plain parallel client, then how fast the controller
// (a separate process, so that its memory is its own) syncs N
// ExternalSecrets over K remote keys of a fake store with a simulated
// latency, with M unrelated Secrets in the cluster; then the steady-state
// refresh load, and a restart with a new ExternalSecret created during it.
// It prints a table and writes the figures as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type config struct {
	N, Keys, Unrelated, Namespaces, Parallel int
	Latency, Refresh, RestartWindow          time.Duration
	// LatencyMax, with -store aws, makes the fake AWS answer each call
	// after a time drawn evenly from [Latency, LatencyMax].
	LatencyMax time.Duration
	// Steady is the window with nothing changing over which the API
	// server's writes are counted; StatusPeriod the controller's
	// --status-refresh-period (0: its default).
	Steady, StatusPeriod time.Duration
	// StandbyWarmup, when set, ends the run with a takeover: a standby
	// controller started that long before the leader is stopped.
	StandbyWarmup time.Duration
	Cycles        int
	Out, Binary   string
	Store         string
	// Operator is the operator of the sync: Watchword, or the bare one
	// (bare.go).
	Operator string
}

const (
	operatorWatchword = "watchword"
	operatorBare      = "bare"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == bareOperatorArg {
		if err := runBare(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bare operator:", err)
			os.Exit(1)
		}
		return
	}
	var c config
	flag.IntVar(&c.N, "n", 10000, "ExternalSecrets to create")
	flag.IntVar(&c.Keys, "keys", 1000, "unique remote keys of the store")
	flag.StringVar(&c.Store, "store", storeFake, "the store: fake (the fake provider, with -latency), memory-plugin (the example memory plugin over a unix socket, which batches reads) or aws (awssm against the loopback fake AWS, which batches reads and counts calls)")
	flag.IntVar(&c.Unrelated, "unrelated", 50000, "unrelated Secrets in other namespaces (created first; their rate is the raw limit)")
	flag.IntVar(&c.Namespaces, "namespaces", 10, "namespaces the ExternalSecrets are spread over")
	flag.IntVar(&c.Parallel, "parallel", 64, "parallel client requests")
	flag.DurationVar(&c.Latency, "latency", 5*time.Millisecond, "simulated latency of every provider call (with -store aws: of every answer of the fake AWS)")
	flag.DurationVar(&c.LatencyMax, "latency-max", 0, "with -store aws: each answer's latency is drawn evenly from [-latency, -latency-max] (0: -latency exactly)")
	flag.DurationVar(&c.Refresh, "refresh", time.Minute, "refreshInterval of the ExternalSecrets")
	flag.IntVar(&c.Cycles, "cycles", 2, "refresh cycles observed in steady state")
	flag.DurationVar(&c.Steady, "steady", 3*time.Minute, "window with nothing changing over which the API server's writes are counted by verb (0: skipped)")
	flag.DurationVar(&c.StatusPeriod, "status-period", 0, "the controller's --status-refresh-period (0: its default, 1h)")
	flag.DurationVar(&c.RestartWindow, "restart-window", time.Minute, "how long the load after a controller restart is observed")
	flag.DurationVar(&c.StandbyWarmup, "standby-warmup", 0, "end with a takeover: start a standby controller, wait this long, stop the leader and time a new ExternalSecret from the standby's lease (0: skipped)")
	flag.StringVar(&c.Out, "out", "bench-results/bench.json", "JSON result file")
	flag.StringVar(&c.Binary, "controller", "bin/watchword", "the watchword binary to run")
	flag.StringVar(&goMemLimit, "controller-gomemlimit", "", "GOMEMLIMIT of the controller process only, such as 120MiB")
	flag.IntVar(&workers, "workers", 0, "the controller's --workers (0: its default)")
	flag.StringVar(&pprofAddr, "controller-pprof", "", "address for the controller's pprof endpoints, such as 127.0.0.1:6060")
	flag.StringVar(&controllerFlags, "controller-flags", "", "more flags of the controller, separated by spaces, such as \"--kube-api-qps=2000 --kube-api-burst=4000\"")
	flag.StringVar(&controllerLogLevel, "controller-log-level", "error", "--log-level of the controller")
	flag.DurationVar(&profileSync, "profile-sync", 0, "CPU profiles of kube-apiserver and (with -controller-pprof) of the controller over the sync's first part of this length, and of kube-apiserver over each of the three writes alone (at most 4s each), written beside -out (0: none)")
	flag.StringVar(&watchList, "watch-list", "", "client-go's WatchListClient feature gate in the controller: true (caches filled by streaming lists), false (paginated lists), empty (client-go's default)")
	flag.StringVar(&c.Operator, "operator", operatorWatchword, "the operator of the sync: watchword, or bare (the least any operator does: one informer, the target and the status; the run ends after the sync)")
	benchCase := flag.String("case", "", "run one case instead of the whole run: fanout (one ClusterExternalSecret reading -keys keys into each of -namespaces namespaces; its store reads at the sync and per refresh cycle), or sharedkey (-n ExternalSecrets reading one key of -store aws; the time from a change of the key, told to the signed refresh endpoint, to each target updated)")
	flag.Parse()
	cases := map[string]func(context.Context, config) error{caseFanOut: runFanOut, caseSharedKey: runSharedKey}
	if runCase, ok := cases[*benchCase]; ok {
		if err := os.MkdirAll(filepath.Dir(c.Out), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := runCase(context.Background(), c); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	} else if *benchCase != "" {
		fmt.Fprintf(os.Stderr, "-case %q: want %s or %s, or none\n", *benchCase, caseFanOut, caseSharedKey)
		os.Exit(2)
	}
	if c.Operator != operatorWatchword && c.Operator != operatorBare {
		fmt.Fprintf(os.Stderr, "-operator %q: want %s or %s\n", c.Operator, operatorWatchword, operatorBare)
		os.Exit(2)
	}
	bareOperator = c.Operator == operatorBare
	statusPeriod = c.StatusPeriod
	if c.Store != storeFake && c.Store != storeMemoryPlugin && c.Store != storeAWS {
		fmt.Fprintf(os.Stderr, "-store %q: want %s, %s or %s\n", c.Store, storeFake, storeMemoryPlugin, storeAWS)
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := os.MkdirAll(filepath.Dir(c.Out), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logPath := strings.TrimSuffix(c.Out, filepath.Ext(c.Out)) + "-controller.log"
	if f, err := os.Create(logPath); err == nil {
		logFile = f
		defer f.Close()
		fmt.Fprintln(os.Stderr, "controller logs:", logPath)
	}
	res, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		if res == nil || res.SyncSeconds == 0 {
			os.Exit(1)
		}
		// What was measured before the error is still worth its figures:
		// printed and written, and the run still fails.
		fmt.Fprintln(os.Stderr, "bench: the figures measured before the error follow")
	}
	res.print(os.Stdout)
	b, _ := json.MarshalIndent(res, "", "  ")
	if werr := os.WriteFile(c.Out, b, 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, werr)
		os.Exit(1)
	}
	fmt.Println("wrote", c.Out)
	if err != nil || !res.AllSynced {
		os.Exit(1)
	}
}
