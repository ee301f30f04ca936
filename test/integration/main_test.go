// Package integration runs Watchword against a real kube-apiserver, etcd and
// kube-controller-manager (garbage collection, namespaces and the workload
// controllers: Deployments, ReplicaSets, StatefulSets, DaemonSets),
// started once for the package; a test node (testnode_test.go) stands in
// for a scheduler and a kubelet where a test needs pods to run. Each test works in namespaces of its own. The Vault server is
// started by the first test that needs it (needVault); without a vault
// binary those tests skip, or fail when $WATCHWORD_REQUIRE_VAULT is set.
package integration

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/watchword-dev/watchword/internal/controller/restart"
	"github.com/watchword-dev/watchword/internal/localcluster"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/azurekv"
	"github.com/watchword-dev/watchword/internal/provider/builtin"
	"github.com/watchword-dev/watchword/internal/provider/gcpsm"
	"github.com/watchword-dev/watchword/internal/refreshhook"
)

var (
	k8s     client.Client
	kube    kubernetes.Interface
	restCfg *rest.Config
	cluster *localcluster.Cluster
	nsSeq   atomic.Int64
	// opCache is the operator's informer cache, for tests of what it holds.
	opCache client.Reader
	// refreshHookURL is the suite operator's refresh endpoint.
	refreshHookURL string
)

// registry is the set of providers main builds (builtin.Registry), with the
// Azure and Google ones pointed at the suite's fakes; every factory counts
// the reads made of each store, so tests can tell when the provider was
// called.
func registry() provider.Registry {
	reg := builtin.Registry()
	reg["azurekv"] = azurekv.Factory{Transport: azureTransport}
	reg["gcpsm"] = gcpsm.Factory{GRPCOptions: gcpServer().GRPCOptions(), HTTPClient: gcpServer().HTTPClient()}
	for name, f := range reg {
		reg[name] = countingFactory{f}
	}
	return reg
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("integration tests need a control plane; skipped with -short")
		os.Exit(0)
	}
	logTo := io.Discard
	if os.Getenv("WATCHWORD_TEST_LOG") != "" {
		logTo = os.Stderr
	}
	// Debug lines are written too, to the leak scanner at least.
	ctrl.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(logTo, leakLog)), zap.Level(zapcore.DebugLevel)))
	var err error
	// The API server presents a client certificate to admission webhooks,
	// for the test of webhook caller authentication.
	webhookDir, err := os.MkdirTemp("", "watchword-webhook-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	apiArgs, caFile, err := webhookClientArgs(webhookDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "the webhook client certificate:", err)
		os.Exit(1)
	}
	webhookClientCA = caFile
	cluster, err = localcluster.Start(localcluster.Options{APIServerArgs: apiArgs})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		os.Exit(1)
	}
	restCfg = cluster.Config
	ctx, cancel := context.WithCancel(context.Background())
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	// The suite's tests run at once and assert each object's own events:
	// no cap on Normal events, which would sum some of them up (the cap
	// has tests of its own, internal/events).
	opts.NormalEventsPerSecond = 0
	// A restart held for a rollout is told after 2 s rather than 5 min,
	// so that the tests of stuck rollouts see it.
	opts.RestartHeldWarningAfter = heldWarningAfter
	// Restarts are spaced 100 ms apart rather than 6 s: the suite's tests
	// of rotations run at once and would otherwise queue behind each
	// other's restarts for minutes. The rate itself is tested with
	// operators of its own (startRestarter).
	opts.RestartRate = restart.Rate{Count: 600, Per: time.Minute}
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	// The installation's digest key, made by the operator, and read
	// again often, for the test of its rotation.
	opts.DigestKeySecret = types.NamespacedName{Namespace: "default", Name: digestKeySecret}
	opts.DigestKeyReload = time.Second
	opts.RefreshHookAddr, err = freeLoopbackAddr()
	if err != nil {
		fmt.Fprintln(os.Stderr, "choosing the refresh hook's port:", err)
		os.Exit(1)
	}
	refreshHookURL = "http://" + opts.RefreshHookAddr + refreshhook.Path
	op, err := operator.New(ctx, cluster.Config, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the operator:", err)
		os.Exit(1)
	}
	opCache = op.Manager.GetCache()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if serr := op.Start(ctx); serr != nil {
			fmt.Fprintln(os.Stderr, "operator stopped:", serr)
		}
	}()
	k8s, err = client.New(cluster.Config, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kube = kubernetes.NewForConfigOrDie(cluster.Config)
	code := m.Run()
	if vaultSrv != nil {
		vaultSrv.Close()
	}
	if azureFake != nil {
		azureFake.Close()
	}
	if otherCluster != nil {
		_ = otherCluster.Stop()
	}
	cancel()
	<-done
	_ = cluster.Stop()
	_ = os.RemoveAll(webhookDir)
	os.Exit(code)
}

// freeLoopbackAddr is a loopback address with a port free at the time.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%s", nsSeq.Add(1), strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	must(t, k8s.Create(context.Background(), ns))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	// Registered after the deletion, so it runs before it.
	t.Cleanup(func() { assertNoLeak(t, name) })
	return name
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it returns true, failing with its last
// explanation after timeout.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var why string
	for {
		ok, w := cond()
		if ok {
			return
		}
		why = w
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consistently checks that cond holds for the whole duration.
func consistently(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, why := cond(); !ok {
			t.Fatalf("condition broke: %s", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
