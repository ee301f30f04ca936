package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/watchword-dev/watchword/internal/controller/restart"
	"github.com/watchword-dev/watchword/internal/logging"
	"github.com/watchword-dev/watchword/internal/notify"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/internal/refreshhook"
	"github.com/watchword-dev/watchword/internal/webhook"
)

// controllerConfig is what the flags of `watchword controller` ask for.
type controllerConfig struct {
	// Kubeconfig is the --kubeconfig file; empty means in-cluster, or
	// $KUBECONFIG.
	Kubeconfig string
	Log        logConfig
	Operator   operator.Options
}

// logConfig is what --log-level and --log-console ask for.
type logConfig struct {
	Level   string
	Console bool
}

// logLevels are the values --log-level accepts.
var logLevels = map[string]zapcore.Level{"debug": zapcore.DebugLevel, "info": zapcore.InfoLevel, "error": zapcore.ErrorLevel}

// logger builds the logger (internal/logging says what it writes at which
// level); the level was checked by the parser.
func (l logConfig) logger() logr.Logger {
	return logging.New(logging.Options{Level: logLevels[l.Level], Console: l.Console})
}

// reportedError is an error of the flag syntax, which the flag package has
// already printed with the usage.
type reportedError struct{ error }

func (e reportedError) Unwrap() error { return e.error }

// newFlagSet returns a flag set that reports to out and returns its errors.
func newFlagSet(name, synopsis string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: watchword %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, which must be flags only. -h gives flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return reportedError{err}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: watchword %s takes flags only", fs.Arg(0), fs.Name())
	}
	return nil
}

func addLogFlags(fs *flag.FlagSet, l *logConfig) {
	fs.StringVar(&l.Level, "log-level", "info", "log level: debug, info or error")
	fs.BoolVar(&l.Console, "log-console", false, "human-readable console logs instead of JSON")
}

func (l logConfig) validate() error {
	if _, ok := logLevels[l.Level]; !ok {
		return fmt.Errorf("--log-level %q is not a log level: use debug, info or error", l.Level)
	}
	return nil
}

// parseController parses and checks the flags of `watchword controller`
// without reaching anything but the kubeconfig file's metadata.
// classPattern is what a store's spec.controller may hold (the CRD's
// pattern and length): an instance of any other class would serve nothing.
var classPattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?)?$`)

func parseController(args []string, out io.Writer) (controllerConfig, error) {
	c := controllerConfig{Operator: operator.DefaultOptions()}
	o := &c.Operator
	o.Registry = registry()
	fs := newFlagSet("controller", "controller [flags]", out)
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config, or $KUBECONFIG)")
	addLogFlags(fs, &c.Log)
	fs.StringVar(&o.ControllerClass, "controller-class", "", "serve only stores whose spec.controller equals this (empty: stores without one)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "concurrent ExternalSecret reconciles (at least 1)")
	fs.Float64Var(&o.StoreCallsPerMinute, "store-calls-per-minute", 0, "call budget of a store that sets no spec.limits.callsPerMinute, in calls per minute (0: none)")
	fs.IntVar(&o.StoreMaxConcurrentCalls, "store-max-concurrent-calls", 0, "calls in flight at most to a store that sets no spec.limits.maxConcurrentCalls (0: half of --workers)")
	restartRate := o.RestartRate.String()
	fs.StringVar(&restartRate, "restart-rate", restartRate, "restarts of workloads for rotations across the cluster: N/D is at most N in any window D, spaced evenly (10/1m, 1/30s); a number alone is per minute; 0: no cap")
	fs.DurationVar(&o.RestartHeldWarningAfter, "restart-held-warning-after", o.RestartHeldWarningAfter, "how long a restart waits for a rollout (its workload's own, or that of the workload restarted before it) before the hold is told in a RestartHeld Warning and counted; 0: at once")
	qps := float64(o.QPS)
	fs.Float64Var(&qps, "kube-api-qps", qps, "requests per second to the API server, one budget for all of the controller's requests whatever their kind (leader election apart; above 0)")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "burst of requests to the API server, of the same one budget as --kube-api-qps (at least 1)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address of the Prometheus metrics endpoint (0 disables)")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "serve the metrics over HTTPS, only to clients the API server authenticates and authorizes for get on the non-resource URL /metrics")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "with --metrics-secure, a directory holding tls.crt and tls.key (default: a self-signed certificate made at start)")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "address of the /healthz and /readyz endpoints (0 disables)")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "", "address of the Go profiling endpoints, /debug/pprof/ (empty disables)")
	fs.StringVar(&o.RefreshHookAddr, "refresh-hook-bind-address", "", "address of the refresh endpoint, /hooks/refresh, for signed notifications of changed keys (empty or 0 disables)")
	hook := &o.RefreshHook
	hook.Window, hook.StoreRate, hook.Rate = refreshhook.DefaultWindow, refreshhook.DefaultStoreRate, refreshhook.DefaultRate
	fs.DurationVar(&hook.Window, "refresh-hook-timestamp-window", hook.Window, "how far a notification's signed X-Watchword-Timestamp may be from this server's clock, either way; a signature accepted within it is refused when sent again (at most 1h)")
	fs.BoolVar(&hook.AllowLegacySignatures, "refresh-hook-allow-legacy-signatures", false, "also accept notifications signed without X-Watchword-Timestamp (the HMAC of the body alone), which can be replayed: for the move of senders to signed timestamps only")
	fs.StringVar(&hook.BearerTokenFile, "refresh-hook-bearer-token-file", "", "file holding a token (at least 32 characters) that senders which cannot sign may send as Authorization: Bearer, for any store with a refreshHook; read again every 10s; weaker than a signature (empty: no token accepted)")
	fs.Float64Var(&hook.StoreRate, "refresh-hook-store-notifications-per-second", hook.StoreRate, "notifications the refresh endpoint accepts a second for one store (ten seconds' worth at once); more are answered 429 with Retry-After")
	fs.Float64Var(&hook.Rate, "refresh-hook-notifications-per-second", hook.Rate, "notifications the refresh endpoint accepts a second for all stores together (ten seconds' worth at once)")
	var leaderPod string
	fs.StringVar(&leaderPod, "refresh-hook-leader-pod", "", "NAMESPACE/NAME of this replica's pod, which it labels watchword.io/leader=true while it leads, so that the refresh endpoint's Service reaches the leader only (needs patch on pods; empty: no label)")
	fs.Float64Var(&o.NormalEventsPerSecond, "normal-events-per-second", o.NormalEventsPerSecond, "Normal events sent a second at most (ten seconds' worth at once after a quiet spell); above it they are summed up every 30s in one event per namespace, kind and reason, on the last object; Warnings are never held back (0: no cap)")
	fs.DurationVar(&o.StatusRefreshPeriod, "status-refresh-period", o.StatusRefreshPeriod, "how often at most a refresh that changed nothing writes an ExternalSecret's status to move its refreshTime (at least 1s)")
	fs.Func("namespace", "serve only this namespace: list and watch nothing elsewhere, so that Roles suffice; repeat the flag or separate names with commas for several; ClusterSecretStores are then not served (default: all namespaces)", func(v string) error {
		for _, ns := range strings.Split(v, ",") {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return fmt.Errorf("%q is not a namespace name: %s", ns, strings.Join(errs, "; "))
			}
			if slices.Contains(o.Namespaces, ns) {
				return fmt.Errorf("namespace %q is named twice", ns)
			}
			o.Namespaces = append(o.Namespaces, ns)
		}
		return nil
	})
	fs.BoolVar(&o.LeaderElection, "leader-elect", false, "elect a leader among the replicas of the controller class")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's namespace)")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "", "name of the leader election lease (default: watchword-leader, or watchword-leader-CLASS with --controller-class)")
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "how long a lease that is not renewed keeps other replicas waiting")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "how long the leader tries to renew its lease before it steps down")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "how often replicas try to take or renew the lease")
	var wh webhookFlags
	wh.add(fs)
	var nf notifyFlags
	nf.add(fs)
	digestKey := fs.String("digest-key-secret", "watchword-digest-key", "Secret in $POD_NAMESPACE holding the key of the digests recorded in status (a PushSecret's dataHash); made with a random key when it does not exist; read again every minute, for a rotation (docs/operations.md); empty, or no $POD_NAMESPACE: plain SHA-256 digests")
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	if err := c.Log.validate(); err != nil {
		return c, err
	}
	if err := wh.apply(o); err != nil {
		return c, err
	}
	if err := nf.apply(o); err != nil {
		return c, err
	}
	if ns := os.Getenv("POD_NAMESPACE"); *digestKey != "" && ns != "" {
		if errs := validation.IsDNS1123Subdomain(*digestKey); len(errs) > 0 {
			return c, fmt.Errorf("--digest-key-secret %q: name a Secret: %s", *digestKey, strings.Join(errs, "; "))
		}
		o.DigestKeySecret = types.NamespacedName{Namespace: ns, Name: *digestKey}
	}
	if o.Workers < 1 {
		return c, fmt.Errorf("--workers %d: use a whole number of at least 1", o.Workers)
	}
	if !(o.NormalEventsPerSecond >= 0) || math.IsInf(o.NormalEventsPerSecond, 0) {
		return c, fmt.Errorf("--normal-events-per-second %g: use a number of events a second, 0 or more (0: no cap)", o.NormalEventsPerSecond)
	}
	if !(o.StoreCallsPerMinute >= 0) || math.IsInf(o.StoreCallsPerMinute, 0) {
		return c, fmt.Errorf("--store-calls-per-minute %g: use a number of calls per minute, 0 or more (0: no budget)", o.StoreCallsPerMinute)
	}
	if o.StoreMaxConcurrentCalls < 0 {
		return c, fmt.Errorf("--store-max-concurrent-calls %d: use a whole number, 0 or more (0: half of --workers)", o.StoreMaxConcurrentCalls)
	}
	if !classPattern.MatchString(o.ControllerClass) {
		return c, fmt.Errorf("--controller-class %q: no store could name it; a store's spec.controller has at most 63 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit", o.ControllerClass)
	}
	rate, err := restart.ParseRate(restartRate)
	if err != nil {
		return c, fmt.Errorf("--restart-rate %w", err)
	}
	o.RestartRate = rate
	if o.RestartHeldWarningAfter < 0 {
		return c, fmt.Errorf("--restart-held-warning-after %s: use a duration of 0 or more, such as 5m (0: tell a hold at once)", o.RestartHeldWarningAfter)
	}
	if !(qps > 0) || qps > math.MaxFloat32 {
		return c, fmt.Errorf("--kube-api-qps %g: use a number above 0 (and at most %g)", qps, float64(math.MaxFloat32))
	}
	o.QPS = float32(qps)
	if o.Burst < 1 {
		return c, fmt.Errorf("--kube-api-burst %d: use a whole number of at least 1", o.Burst)
	}
	if o.StatusRefreshPeriod < time.Second {
		return c, fmt.Errorf("--status-refresh-period %s: use a duration of at least 1s, such as 1h (refreshTime moves at most once per period when nothing else changes)", o.StatusRefreshPeriod)
	}
	if err := checkLeaderElection(o); err != nil {
		return c, err
	}
	if err := checkRefreshHook(o, leaderPod); err != nil {
		return c, err
	}
	if c.Kubeconfig != "" {
		if err := checkKubeconfig(c.Kubeconfig); err != nil {
			return c, err
		}
	}
	return c, nil
}

// checkRefreshHook checks the refresh endpoint's flags, when it is served,
// and sets the leader pod.
func checkRefreshHook(o *operator.Options, leaderPod string) error {
	a := o.RefreshHookAddr
	if a == "" || a == "0" {
		return nil
	}
	if _, _, err := net.SplitHostPort(a); err != nil {
		return fmt.Errorf("--refresh-hook-bind-address %q: use host:port or :port, such as :8443 (empty or 0 disables)", a)
	}
	hook := &o.RefreshHook
	if hook.Window <= 0 {
		return fmt.Errorf("--refresh-hook-timestamp-window %s: use a duration above 0 and at most 1h, such as 5m", hook.Window)
	}
	if !(hook.StoreRate > 0) {
		return fmt.Errorf("--refresh-hook-store-notifications-per-second %g: use a number above 0", hook.StoreRate)
	}
	if !(hook.Rate > 0) {
		return fmt.Errorf("--refresh-hook-notifications-per-second %g: use a number above 0", hook.Rate)
	}
	if err := refreshhook.CheckOptions(*hook); err != nil {
		return err
	}
	if f := hook.BearerTokenFile; f != "" {
		// Read now, so that a wrong path or a short token stops the start
		// instead of every sender's request; the error never holds the
		// file's content.
		if _, err := refreshhook.ReadToken(f); err != nil {
			return fmt.Errorf("--refresh-hook-bearer-token-file %s: the token is %v: use a file holding at least %d characters, such as the key of a mounted Secret",
				f, err, refreshhook.MinTokenLength)
		}
	}
	if leaderPod != "" {
		ns, name, ok := strings.Cut(leaderPod, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return fmt.Errorf("--refresh-hook-leader-pod %q: use NAMESPACE/NAME of this replica's pod, such as $(POD_NAMESPACE)/$(POD_NAME) from the downward API", leaderPod)
		}
		hook.LeaderPod = types.NamespacedName{Namespace: ns, Name: name}
	}
	return nil
}

func checkLeaderElection(o *operator.Options) error {
	if o.LeaderElectionID != "" {
		if errs := validation.IsDNS1123Subdomain(o.LeaderElectionID); len(errs) > 0 {
			return fmt.Errorf("--leader-election-id %q is not a valid lease name: %s", o.LeaderElectionID, strings.Join(errs, "; "))
		}
	}
	if o.LeaderElectionNamespace != "" {
		if errs := validation.IsDNS1123Label(o.LeaderElectionNamespace); len(errs) > 0 {
			return fmt.Errorf("--leader-election-namespace %q is not a valid namespace name: %s", o.LeaderElectionNamespace, strings.Join(errs, "; "))
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"lease-duration", o.LeaseDuration}, {"renew-deadline", o.RenewDeadline}, {"retry-period", o.RetryPeriod}} {
		if d.v <= 0 {
			return fmt.Errorf("--leader-election-%s %s: use a duration above 0, such as 10s", d.flag, d.v)
		}
	}
	// The same rules as client-go's leader election, which would refuse
	// them only once the operator started.
	if o.LeaseDuration <= o.RenewDeadline {
		return fmt.Errorf("--leader-election-lease-duration %s must be longer than --leader-election-renew-deadline %s", o.LeaseDuration, o.RenewDeadline)
	}
	if o.RenewDeadline <= time.Duration(1.2*float64(o.RetryPeriod)) {
		return fmt.Errorf("--leader-election-renew-deadline %s must be longer than 1.2 times --leader-election-retry-period %s", o.RenewDeadline, o.RetryPeriod)
	}
	return nil
}

// checkKubeconfig says plainly what is wrong with a --kubeconfig file that
// client-go would only report as a missing configuration.
func checkKubeconfig(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("kubeconfig file %s does not exist", path)
	case err != nil:
		return fmt.Errorf("kubeconfig file: %w", err)
	case st.IsDir():
		return fmt.Errorf("kubeconfig file %s is a directory", path)
	}
	return nil
}

// webhookFlags are the flags of the admission webhook (docs/operations.md).
type webhookFlags struct {
	port                                                  int
	host, certDir, namespace, service, secret, configName string
	validity                                              time.Duration
	clientCA, clientNames                                 string
}

func (w *webhookFlags) add(fs *flag.FlagSet) {
	fs.IntVar(&w.port, "webhook-port", 0, "port of the admission webhook that refuses a second writer of a target (0: not served)")
	fs.StringVar(&w.host, "webhook-host", "", "address the admission webhook listens on (default: all)")
	fs.StringVar(&w.certDir, "webhook-cert-dir", "", "folder with tls.crt and tls.key to serve (such as a cert-manager Certificate's Secret); the caBundle is then left to its issuer. Empty: the controller issues and renews its own certificate")
	fs.StringVar(&w.namespace, "webhook-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the webhook's Service and certificate Secret (default: $POD_NAMESPACE)")
	fs.StringVar(&w.service, "webhook-service", "watchword-webhook", "name of the webhook's Service, which the certificate is issued for")
	fs.StringVar(&w.secret, "webhook-cert-secret", "watchword-webhook-cert", "Secret that holds the self-issued certificate")
	fs.StringVar(&w.configName, "webhook-configuration", "watchword", "ValidatingWebhookConfiguration whose caBundle the controller keeps (its RBAC allows only watchword)")
	fs.DurationVar(&w.validity, "webhook-cert-validity", 365*24*time.Hour, "validity of a self-issued certificate; it is renewed when a third is left (at least 1h)")
	fs.StringVar(&w.clientCA, "webhook-client-ca", "", "PEM file of the CA that signs the API server's webhook client certificate: callers without a certificate it signed are refused at the TLS handshake (empty: callers are not authenticated)")
	fs.StringVar(&w.clientNames, "webhook-client-names", "", "with --webhook-client-ca, comma-separated common names or DNS names a caller's certificate must have one of (empty: any the CA signed)")
}

// apply sets o.Webhook from the flags.
func (w *webhookFlags) apply(o *operator.Options) error {
	if w.port == 0 {
		return nil
	}
	if w.port < 0 || w.port > 65535 {
		return fmt.Errorf("--webhook-port %d: use a port from 1 to 65535 (0: no webhook)", w.port)
	}
	opts := &webhook.Options{Host: w.host, Port: w.port, CertDir: w.certDir, ClientCAFile: w.clientCA}
	if w.clientNames != "" {
		if w.clientCA == "" {
			return fmt.Errorf("--webhook-client-names needs --webhook-client-ca: the names are checked on certificates that CA signed")
		}
		for _, n := range strings.Split(w.clientNames, ",") {
			if n = strings.TrimSpace(n); n != "" {
				opts.ClientNames = append(opts.ClientNames, n)
			}
		}
	}
	if w.certDir == "" {
		if errs := validation.IsDNS1123Label(w.namespace); len(errs) > 0 {
			return fmt.Errorf("--webhook-namespace %q: name the namespace of the webhook's Service (or set $POD_NAMESPACE): %s", w.namespace, strings.Join(errs, "; "))
		}
		for flag, v := range map[string]string{"webhook-service": w.service, "webhook-cert-secret": w.secret, "webhook-configuration": w.configName} {
			if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
				return fmt.Errorf("--%s %q is not a valid object name: %s", flag, v, strings.Join(errs, "; "))
			}
		}
		if w.validity < time.Hour {
			return fmt.Errorf("--webhook-cert-validity %s: use at least 1h, such as 8760h (a year)", w.validity)
		}
		svc := w.service + "." + w.namespace + ".svc"
		opts.Certs = webhook.CertOptions{Namespace: w.namespace, SecretName: w.secret, ConfigName: w.configName,
			DNSNames: []string{svc, svc + ".cluster.local"}, Validity: w.validity}
	}
	o.Webhook = opts
	return nil
}

// notifyFlags are the flags of the notifications of restarts
// (docs/notifications.md).
type notifyFlags struct {
	secret, namespace, cluster, events string
	opts                               notify.Options
}

func (n *notifyFlags) add(fs *flag.FlagSet) {
	n.opts = notify.DefaultOptions()
	fs.StringVar(&n.secret, "notify-secret", "", "Secret holding the URLs of the receivers of notifications of restarts (keys webhook-url and webhook-signing-key, slack-webhook-url, teams-webhook-url); read again every minute; empty: no notifications")
	fs.StringVar(&n.namespace, "notify-secret-namespace", os.Getenv("POD_NAMESPACE"), "namespace of --notify-secret (default: $POD_NAMESPACE)")
	fs.StringVar(&n.events, "notify-events", strings.Join(notify.Types, ","), "the notifications sent, separated by commas: Restarted, RestartHeld")
	fs.StringVar(&n.cluster, "notify-cluster-name", "", "name of this cluster in every notification (empty: none)")
	fs.IntVar(&n.opts.QueueSize, "notify-queue-size", n.opts.QueueSize, "notifications waiting for one receiver at most; when full, the oldest is dropped (and counted)")
	fs.IntVar(&n.opts.Workers, "notify-workers", n.opts.Workers, "notifications sent to one receiver at once (at least 1)")
	fs.DurationVar(&n.opts.Timeout, "notify-timeout", n.opts.Timeout, "time one attempt at a notification may take, the answer included")
	fs.IntVar(&n.opts.Attempts, "notify-attempts", n.opts.Attempts, "attempts at one notification, the first included, 1s apart and doubling; a 429's Retry-After is honoured up to 5m")
}

// apply sets o.NotifySecret and o.Notify from the flags.
func (n *notifyFlags) apply(o *operator.Options) error {
	if n.secret == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(n.secret); len(errs) > 0 {
		return fmt.Errorf("--notify-secret %q is not a Secret name: %s", n.secret, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(n.namespace); len(errs) > 0 {
		return fmt.Errorf("--notify-secret-namespace %q: name the namespace of --notify-secret (or set $POD_NAMESPACE): %s", n.namespace, strings.Join(errs, "; "))
	}
	for t := range strings.SplitSeq(n.events, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(notify.Types, t) {
			return fmt.Errorf("--notify-events names %q: use %s, separated by commas", t, strings.Join(notify.Types, ", "))
		}
		n.opts.Types = append(n.opts.Types, t)
	}
	if n.opts.QueueSize < 1 {
		return fmt.Errorf("--notify-queue-size %d: use a whole number of at least 1", n.opts.QueueSize)
	}
	if n.opts.Workers < 1 {
		return fmt.Errorf("--notify-workers %d: use a whole number of at least 1", n.opts.Workers)
	}
	if n.opts.Timeout <= 0 {
		return fmt.Errorf("--notify-timeout %s: use a duration above 0, such as 10s", n.opts.Timeout)
	}
	if n.opts.Attempts < 1 {
		return fmt.Errorf("--notify-attempts %d: use a whole number of at least 1", n.opts.Attempts)
	}
	if len(n.cluster) > 253 {
		return fmt.Errorf("--notify-cluster-name: use at most 253 characters")
	}
	n.opts.Cluster = n.cluster
	o.NotifySecret = types.NamespacedName{Namespace: n.namespace, Name: n.secret}
	o.Notify = n.opts
	return nil
}
