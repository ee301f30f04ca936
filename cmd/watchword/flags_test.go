package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/watchword-dev/watchword/internal/controller/restart"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/internal/refreshhook"
)

func TestParseControllerDefaults(t *testing.T) {
	c, err := parseController(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Operator
	want := operator.DefaultOptions()
	if c.Kubeconfig != "" || c.Log != (logConfig{Level: "info"}) {
		t.Errorf("kubeconfig %q, log %+v; want none and info as JSON", c.Kubeconfig, c.Log)
	}
	if o.Workers != want.Workers || o.QPS != want.QPS || o.Burst != want.Burst ||
		o.MetricsAddr != want.MetricsAddr || o.HealthAddr != want.HealthAddr || o.PprofAddr != "" || o.RefreshHookAddr != "" {
		t.Errorf("options %+v, want the defaults %+v", o, want)
	}
	if o.ControllerClass != "" || o.LeaderElection || o.LeaderElectionID != "" || o.LeaderElectionNamespace != "" {
		t.Errorf("leader election %v, class %q, lease %q in %q; want off, default class, derived lease",
			o.LeaderElection, o.ControllerClass, o.LeaderElectionID, o.LeaderElectionNamespace)
	}
	if o.LeaseDuration != 15*time.Second || o.RenewDeadline != 10*time.Second || o.RetryPeriod != 2*time.Second {
		t.Errorf("lease timing %s/%s/%s, want 15s/10s/2s", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	if o.RestartRate != (restart.Rate{Count: 10, Per: time.Minute}) || o.RestartHeldWarningAfter != 5*time.Minute {
		t.Errorf("restart rate %s, held warning after %s; want 10/1m and 5m", o.RestartRate, o.RestartHeldWarningAfter)
	}
	if h := o.RefreshHook; h != (refreshhook.Options{Window: 5 * time.Minute, StoreRate: 1, Rate: 10}) {
		t.Errorf("refresh hook %+v: want a window of 5m, 1 notification a second per store and 10 in all, no legacy signatures, no token, no leader pod", h)
	}
	if o.SkipNameValidation {
		t.Error("the binary skips controller name validation")
	}
	if o.Registry["fake"] == nil || o.Registry["kubernetes"] == nil || o.Registry["vault"] == nil {
		t.Errorf("registry %v lacks a provider", o.Registry)
	}
}

func TestParseControllerAccepts(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte(strings.Repeat("t", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseController([]string{
		"--kubeconfig", kubeconfig, "--log-level", "debug", "--log-console",
		"--controller-class", "shard-a", "--workers", "4", "--kube-api-qps", "20.5", "--kube-api-burst", "40", "--restart-rate", "3/20s",
		"--restart-held-warning-after", "90s",
		"--metrics-bind-address", "0", "--health-probe-bind-address", ":9000", "--pprof-bind-address", "127.0.0.1:6060",
		"--refresh-hook-bind-address", ":8443", "--status-refresh-period", "30m",
		"--refresh-hook-timestamp-window", "2m", "--refresh-hook-allow-legacy-signatures", "--refresh-hook-bearer-token-file", token,
		"--refresh-hook-store-notifications-per-second", "0.5", "--refresh-hook-notifications-per-second", "20",
		"--refresh-hook-leader-pod", "watchword/watchword-7d4b9c-x2x9z",
		"--leader-elect", "--leader-election-namespace", "watchword", "--leader-election-id", "my-lease",
		"--leader-election-lease-duration", "30s", "--leader-election-renew-deadline", "20s", "--leader-election-retry-period", "5s",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Operator
	if c.Kubeconfig != kubeconfig || c.Log != (logConfig{Level: "debug", Console: true}) {
		t.Errorf("kubeconfig %q, log %+v", c.Kubeconfig, c.Log)
	}
	if o.ControllerClass != "shard-a" || o.Workers != 4 || o.QPS != 20.5 || o.Burst != 40 || o.RestartRate != (restart.Rate{Count: 3, Per: 20 * time.Second}) ||
		o.RestartHeldWarningAfter != 90*time.Second ||
		o.MetricsAddr != "0" || o.HealthAddr != ":9000" || o.PprofAddr != "127.0.0.1:6060" || o.RefreshHookAddr != ":8443" ||
		o.StatusRefreshPeriod != 30*time.Minute {
		t.Errorf("options %+v", o)
	}
	if h := o.RefreshHook; h != (refreshhook.Options{Window: 2 * time.Minute, AllowLegacySignatures: true, BearerTokenFile: token, StoreRate: 0.5, Rate: 20,
		LeaderPod: types.NamespacedName{Namespace: "watchword", Name: "watchword-7d4b9c-x2x9z"}}) {
		t.Errorf("refresh hook %+v", h)
	}
	if !o.LeaderElection || o.LeaderElectionNamespace != "watchword" || o.LeaderElectionID != "my-lease" ||
		o.LeaseDuration != 30*time.Second || o.RenewDeadline != 20*time.Second || o.RetryPeriod != 5*time.Second {
		t.Errorf("leader election %+v", o)
	}
}

func TestParseControllerRefuses(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	shortToken := filepath.Join(dir, "short-token")
	if err := os.WriteFile(shortToken, []byte("a-secret-too-short"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string // a fragment of the error
	}{
		{"missing kubeconfig", []string{"--kubeconfig", missing}, "kubeconfig file " + missing + " does not exist"},
		{"kubeconfig is a folder", []string{"--kubeconfig", dir}, "is a directory"},
		{"unknown log level", []string{"--log-level", "verbose"}, `--log-level "verbose" is not a log level: use debug, info or error`},
		{"empty log level", []string{"--log-level", ""}, "use debug, info or error"},
		{"no workers", []string{"--workers", "0"}, "--workers 0: use a whole number of at least 1"},
		{"negative workers", []string{"--workers", "-3"}, "--workers -3: use a whole number of at least 1"},
		{"zero qps", []string{"--kube-api-qps", "0"}, "--kube-api-qps 0: use a number above 0"},
		{"negative qps", []string{"--kube-api-qps", "-1"}, "use a number above 0"},
		{"qps not a number", []string{"--kube-api-qps", "NaN"}, "use a number above 0"},
		{"infinite qps", []string{"--kube-api-qps", "+Inf"}, "use a number above 0"},
		{"negative restart rate", []string{"--restart-rate", "-1"}, `--restart-rate "-1": write N/D, at most N restarts in any window D, such as 10/1m or 1/30s`},
		{"restart rate not a number", []string{"--restart-rate", "NaN"}, "write N/D"},
		{"restart rate without a window", []string{"--restart-rate", "10/"}, `--restart-rate "10/": D in N/D is a Go duration above 0`},
		{"restart rate with a fraction of restarts", []string{"--restart-rate", "2.5/1m"}, "N in N/D is a whole number of restarts"},
		{"restart rate with a zero window", []string{"--restart-rate", "5/0s"}, "D in N/D is a Go duration above 0"},
		{"negative held warning threshold", []string{"--restart-held-warning-after", "-1m"}, "--restart-held-warning-after -1m0s: use a duration of 0 or more"},
		{"zero status period", []string{"--status-refresh-period", "0s"}, "--status-refresh-period 0s: use a duration of at least 1s"},
		{"status period under a second", []string{"--status-refresh-period", "500ms"}, "use a duration of at least 1s"},
		{"zero burst", []string{"--kube-api-burst", "0"}, "--kube-api-burst 0: use a whole number of at least 1"},
		{"negative burst", []string{"--kube-api-burst", "-10"}, "use a whole number of at least 1"},
		{"invalid lease name", []string{"--leader-election-id", "My_Lease"}, `--leader-election-id "My_Lease" is not a valid lease name`},
		{"invalid lease namespace", []string{"--leader-election-namespace", "Kube.System"}, "is not a valid namespace name"},
		{"zero lease duration", []string{"--leader-election-lease-duration", "0s"}, "--leader-election-lease-duration 0s: use a duration above 0"},
		{"negative retry period", []string{"--leader-election-retry-period", "-1s"}, "--leader-election-retry-period -1s: use a duration above 0"},
		{"lease shorter than renewal", []string{"--leader-election-lease-duration", "10s"}, "must be longer than --leader-election-renew-deadline"},
		{"renewal too close to retry", []string{"--leader-election-retry-period", "9s"}, "must be longer than 1.2 times --leader-election-retry-period"},
		{"refresh hook address without port", []string{"--refresh-hook-bind-address", "8443"}, `--refresh-hook-bind-address "8443": use host:port or :port`},
		{"refresh hook window of zero", []string{"--refresh-hook-bind-address", ":8443", "--refresh-hook-timestamp-window", "0s"}, "--refresh-hook-timestamp-window 0s: use a duration above 0"},
		{"refresh hook window too long", []string{"--refresh-hook-bind-address", ":8443", "--refresh-hook-timestamp-window", "2h"}, "--refresh-hook-timestamp-window 2h0m0s: use a duration above 0 and at most 1h"},
		{"refresh hook store rate of zero", []string{"--refresh-hook-bind-address", ":8443", "--refresh-hook-store-notifications-per-second", "0"}, "--refresh-hook-store-notifications-per-second 0: use a number above 0"},
		{"refresh hook rate not a number", []string{"--refresh-hook-bind-address", ":8443", "--refresh-hook-notifications-per-second", "NaN"}, "--refresh-hook-notifications-per-second NaN: use a number above 0"},
		{"refresh hook rate beyond the replay memory", []string{"--refresh-hook-bind-address", ":8443", "--refresh-hook-notifications-per-second", "1000"}, "signatures remembered to refuse replays"},
		{"refresh hook token file missing", []string{"--refresh-hook-bind-address", ":8443", "--refresh-hook-bearer-token-file", missing}, "--refresh-hook-bearer-token-file " + missing + ": the token is missing"},
		{"refresh hook token too short", []string{"--refresh-hook-bind-address", ":8443", "--refresh-hook-bearer-token-file", shortToken}, "the token is too short: use a file holding at least 32 characters"},
		{"refresh hook leader pod without namespace", []string{"--refresh-hook-bind-address", ":8443", "--refresh-hook-leader-pod", "watchword-abc"}, `--refresh-hook-leader-pod "watchword-abc": use NAMESPACE/NAME`},
		{"refresh hook leader pod unexpanded", []string{"--refresh-hook-bind-address", ":8443", "--refresh-hook-leader-pod", "$(POD_NAMESPACE)/$(POD_NAME)"}, "use NAMESPACE/NAME of this replica's pod"},
		{"an argument", []string{"--workers", "2", "extra"}, `unexpected argument "extra"`},
		{"a class no store can name", []string{"--controller-class", "Shard_A"}, `--controller-class "Shard_A": no store could name it`},
		{"a class too long", []string{"--controller-class", strings.Repeat("a", 64)}, "no store could name it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseController(c.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("parseController(%q) = %v, want an error with %q", c.args, err, c.want)
			}
			if strings.Contains(err.Error(), "a-secret-too-short") {
				t.Fatalf("the error holds the token file's content: %v", err)
			}
		})
	}
}

// Syntax errors are the flag package's, already printed with the usage.
func TestParseControllerSyntaxErrors(t *testing.T) {
	for _, args := range [][]string{{"--no-such-flag"}, {"--workers", "many"}, {"--kube-api-qps", "fast"}, {"--leader-election-retry-period", "2"}} {
		var out strings.Builder
		_, err := parseController(args, &out)
		var reported reportedError
		if !errors.As(err, &reported) {
			t.Errorf("parseController(%q) = %v, want a reported syntax error", args, err)
		}
		if !strings.Contains(out.String(), "Usage: watchword controller") {
			t.Errorf("parseController(%q) printed %q, want the usage", args, out.String())
		}
	}
	if _, err := parseController([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h gives %v, want flag.ErrHelp", err)
	}
}

// --namespace is repeatable and takes comma lists; a bad or repeated name
// is refused with the name.
func TestParseControllerNamespaces(t *testing.T) {
	c, err := parseController([]string{"--namespace", "team-a,team-b", "--namespace", "team-c"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Operator.Namespaces; !slices.Equal(got, []string{"team-a", "team-b", "team-c"}) {
		t.Errorf("namespaces %q, want team-a, team-b and team-c", got)
	}
	if c, err := parseController(nil, io.Discard); err != nil || c.Operator.Namespaces != nil {
		t.Errorf("without --namespace: namespaces %q, error %v; want none (all namespaces)", c.Operator.Namespaces, err)
	}
	for _, bad := range []struct{ arg, want string }{
		{"Team_A", `"Team_A" is not a namespace name`},
		{"team-a,", `"" is not a namespace name`},
		{"team-a,team-a", `namespace "team-a" is named twice`},
	} {
		var out strings.Builder
		_, err := parseController([]string{"--namespace", bad.arg}, &out)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("--namespace %q: %v, want an error with %q", bad.arg, err, bad.want)
		}
	}
}

// TestParseControllerWebhook: the webhook is off unless --webhook-port; it
// then issues a certificate for its Service in its namespace, or serves
// --webhook-cert-dir; bad values are refused with what to use.
func TestParseControllerWebhook(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	c, err := parseController(nil, io.Discard)
	if err != nil || c.Operator.Webhook != nil {
		t.Fatalf("no flags: webhook %+v, err %v; want none", c.Operator.Webhook, err)
	}
	c, err = parseController([]string{"--webhook-port", "9443", "--webhook-namespace", "ww", "--webhook-cert-validity", "720h"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	w := c.Operator.Webhook
	if w == nil || w.Port != 9443 || w.CertDir != "" || w.Certs.Namespace != "ww" || w.Certs.SecretName != "watchword-webhook-cert" ||
		w.Certs.ConfigName != "watchword" || w.Certs.Validity != 720*time.Hour ||
		strings.Join(w.Certs.DNSNames, ",") != "watchword-webhook.ww.svc,watchword-webhook.ww.svc.cluster.local" {
		t.Errorf("webhook options %+v", w)
	}
	t.Setenv("POD_NAMESPACE", "from-env")
	c, err = parseController([]string{"--webhook-port", "9443"}, io.Discard)
	if err != nil || c.Operator.Webhook.Certs.Namespace != "from-env" {
		t.Errorf("namespace from $POD_NAMESPACE: %+v, %v", c.Operator.Webhook, err)
	}
	c, err = parseController([]string{"--webhook-port", "9443", "--webhook-cert-dir", "/certs"}, io.Discard)
	if err != nil || c.Operator.Webhook.CertDir != "/certs" {
		t.Errorf("cert dir: %+v, %v", c.Operator.Webhook, err)
	}
	t.Setenv("POD_NAMESPACE", "")
	for args, want := range map[string]string{
		"--webhook-port=70000": "--webhook-port 70000",
		"--webhook-port=9443":  "--webhook-namespace",
		"--webhook-port=9443 --webhook-namespace=ww --webhook-cert-validity=1m": "--webhook-cert-validity 1m0s",
		"--webhook-port=9443 --webhook-namespace=ww --webhook-service=Bad_Name": "--webhook-service",
	} {
		if _, err := parseController(strings.Fields(args), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %s", args, err, want)
		}
	}
}

// TestParseControllerNotify: notifications are off unless --notify-secret;
// then they read it in --notify-secret-namespace (or $POD_NAMESPACE) with
// the events, cluster name and delivery asked for; bad values are refused
// with what to use.
func TestParseControllerNotify(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	c, err := parseController(nil, io.Discard)
	if err != nil || c.Operator.NotifySecret.Name != "" {
		t.Fatalf("no flags: notify secret %v, err %v; want none", c.Operator.NotifySecret, err)
	}
	c, err = parseController([]string{"--notify-secret", "receivers", "--notify-secret-namespace", "ops", "--notify-events", "RestartHeld",
		"--notify-cluster-name", "prod-eu", "--notify-queue-size", "50", "--notify-workers", "3", "--notify-timeout", "4s", "--notify-attempts", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	n := c.Operator.Notify
	if c.Operator.NotifySecret != (types.NamespacedName{Namespace: "ops", Name: "receivers"}) || !slices.Equal(n.Types, []string{"RestartHeld"}) ||
		n.Cluster != "prod-eu" || n.QueueSize != 50 || n.Workers != 3 || n.Timeout != 4*time.Second || n.Attempts != 2 {
		t.Errorf("notify %v %+v", c.Operator.NotifySecret, n)
	}
	t.Setenv("POD_NAMESPACE", "from-env")
	c, err = parseController([]string{"--notify-secret", "receivers"}, io.Discard)
	if err != nil || c.Operator.NotifySecret.Namespace != "from-env" || !slices.Equal(c.Operator.Notify.Types, []string{"Restarted", "RestartHeld"}) ||
		c.Operator.Notify.QueueSize != 1000 || c.Operator.Notify.Attempts != 6 {
		t.Errorf("defaults: %v %+v, %v", c.Operator.NotifySecret, c.Operator.Notify, err)
	}
	t.Setenv("POD_NAMESPACE", "")
	for args, want := range map[string]string{
		"--notify-secret=receivers":                                                  "--notify-secret-namespace",
		"--notify-secret=Bad_Name --notify-secret-namespace=ops":                     `--notify-secret "Bad_Name" is not a Secret name`,
		"--notify-secret=r --notify-secret-namespace=ops --notify-events=Restart":    `--notify-events names "Restart": use Restarted, RestartHeld`,
		"--notify-secret=r --notify-secret-namespace=ops --notify-queue-size=0":      "--notify-queue-size 0",
		"--notify-secret=r --notify-secret-namespace=ops --notify-workers=0":         "--notify-workers 0",
		"--notify-secret=r --notify-secret-namespace=ops --notify-timeout=0s":        "--notify-timeout 0s",
		"--notify-secret=r --notify-secret-namespace=ops --notify-attempts=0":        "--notify-attempts 0",
		"--notify-secret=r --notify-secret-namespace=ops --notify-events=Restarted,": `--notify-events names ""`,
	} {
		if _, err := parseController(strings.Fields(args), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one with %s", args, err, want)
		}
	}
}
