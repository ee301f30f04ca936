// Package e2e runs Watchword as it is deployed: its image, built by
// internal/imagebuild as `make image` builds it, loaded into a real node
// (test/node: containerd, kubelet, kube-proxy, kube-scheduler), and the
// chart installed with Helm into a namespace that enforces the restricted
// Pod Security level. The tests then check what a user sees of running
// pods.
//
// TestMain starts the control plane and the node once. Without root, or
// without `make tools-node` and `make tools-helm`, every test is skipped
// with the reason, unless $WATCHWORD_REQUIRE_NODE is set (make test sets
// it), and then they fail.
package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/imagebuild"
	"github.com/watchword-dev/watchword/internal/localcluster"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/test/node"
)

const (
	// operatorImage is what the chart asks for with image.tag=e2e, and
	// upgradeImage with image.tag=e2e-upgrade: the same binary with
	// another version, so another image.
	operatorImage = "watchword:e2e"
	upgradeImage  = "watchword:e2e-upgrade"
	pauseImage    = "watchword.local/pause:e2e"
	appImage      = "watchword.local/app:e2e"
	// release and releaseNS are the chart's installation.
	release   = "watchword"
	releaseNS = "watchword-system"
)

// env is the suite's cluster, node and clients; nil when skipped.
type env struct {
	cluster    *localcluster.Cluster
	node       *node.Node
	cfg        *rest.Config
	kube       kubernetes.Interface
	k8s        client.Client
	kubeconfig string
	helm       string
	chart      string
	dir        string
}

var (
	e          *env
	skipReason string
)

// need skips the test when the suite has no node.
func need(t *testing.T) *env {
	t.Helper()
	if e == nil {
		t.Skip(skipReason)
	}
	return e
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("end-to-end tests need a node; skipped with -short")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	s, reason, err := setUp(ctx)
	if s != nil {
		defer s.tearDown()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "setting up the node:", err)
		if s != nil && s.node != nil {
			fmt.Fprintln(os.Stderr, "node logs are in", s.node.Dir())
		}
		return 1
	}
	e, skipReason = s, reason
	return m.Run()
}

// setUp starts everything, or returns a reason to skip.
func setUp(ctx context.Context) (s *env, skip string, err error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "watchword-e2e-")
	if err != nil {
		return nil, "", err
	}
	s = &env{dir: dir}
	assets, err := localcluster.AssetsDir("")
	if err != nil {
		return orSkip(s, err)
	}
	bins := node.LookupBinaries(assets)
	s.helm = filepath.Join(assets, "helm")
	if err = node.Check(bins); err != nil {
		return orSkip(s, err)
	}
	if _, err = os.Stat(s.helm); err != nil {
		return orSkip(s, errors.New("no helm beside kube-apiserver: run `make tools-helm`"))
	}
	// The node's address first: the API server listens there.
	if s.node, err = node.New(bins); err != nil {
		return s, "", err
	}
	cluster, err := localcluster.Start(localcluster.Options{
		AssetsDir:   assets,
		NodeNetwork: &localcluster.NodeNetwork{Address: node.Address, ServiceCIDR: node.ServiceCIDR},
	})
	if err != nil {
		return s, "", err
	}
	s.cluster, s.cfg = cluster, cluster.Config
	root, err := repoRoot()
	if err != nil {
		return s, "", err
	}
	s.chart = filepath.Join(root, "deploy", "charts", "watchword")
	images, err := buildImages(ctx, root, dir)
	if err != nil {
		return s, "", err
	}
	kc, err := cluster.Kubeconfig()
	if err != nil {
		return s, "", err
	}
	s.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err = os.WriteFile(s.kubeconfig, kc, 0o600); err != nil {
		return s, "", err
	}
	if s.kube, err = kubernetes.NewForConfig(s.cfg); err != nil {
		return s, "", err
	}
	if s.k8s, err = client.New(s.cfg, client.Options{Scheme: operator.Scheme()}); err != nil {
		return s, "", err
	}
	if err := s.node.Start(ctx, kc, s.cfg, pauseImage, images); err != nil {
		return s, "", err
	}
	fmt.Printf("node Ready %.1fs after the start\n", time.Since(start).Seconds())
	if err := s.install(ctx); err != nil {
		return s, "", err
	}
	fmt.Printf("chart installed and the operator Ready %.1fs after the start\n", time.Since(start).Seconds())
	return s, "", nil
}

// orSkip turns a missing prerequisite into a reason to skip, or an error
// under $WATCHWORD_REQUIRE_NODE.
func orSkip(s *env, why error) (*env, string, error) {
	if node.Required() {
		return s, "", fmt.Errorf("%w; %s is set, so the end-to-end tests may not be skipped", why, node.RequireEnv)
	}
	return s, fmt.Sprintf("needs a real node: %v (or set %s=1 to make this a failure)", why, node.RequireEnv), nil
}

func (s *env) tearDown() {
	if s.node != nil {
		if err := s.node.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the node:", err)
		}
	}
	if s.cluster != nil {
		_ = s.cluster.Stop()
	}
	_ = os.RemoveAll(s.dir)
}

// buildImages builds the static binaries and writes the three images:
// the pause image of the pods' sandboxes and the test workload's, both
// from test/e2e/app, and the operator's, as `make image` defines it.
func buildImages(ctx context.Context, root, dir string) ([]string, error) {
	build := func(pkg, out string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w: %s", pkg, err, out)
		}
		return os.ReadFile(out)
	}
	app, err := build("./test/e2e/app", filepath.Join(dir, "app"))
	if err != nil {
		return nil, err
	}
	op, err := build("./cmd/watchword", filepath.Join(dir, "watchword"))
	if err != nil {
		return nil, err
	}
	defs := []struct {
		ref  string
		opts imagebuild.Options
	}{
		{pauseImage, imagebuild.Options{Binary: app, BinaryPath: "/app", Entrypoint: []string{"/app", "pause"}}},
		{appImage, imagebuild.Options{Binary: app, BinaryPath: "/app", Entrypoint: []string{"/app", "serve"}}},
		{operatorImage, imagebuild.Operator(op, "e2e", "", "", time.Time{})},
		{upgradeImage, imagebuild.Operator(op, "e2e-upgrade", "", "", time.Time{})},
	}
	var paths []string
	for _, d := range defs {
		img, err := imagebuild.Build(d.opts)
		if err != nil {
			return nil, err
		}
		p, err := writeImage(dir, d.ref, img)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func writeImage(dir, ref string, img v1.Image) (string, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
	return p, tarball.WriteToFile(p, tag, img)
}

// install creates the release's namespace, enforcing the restricted Pod
// Security level, and installs the chart with the image loaded into the
// node, two replicas and the admission webhook, waiting until it is
// Ready.
func (s *env) install(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}}}
	if _, err := s.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	return s.helmInstall(ctx)
}

// installValues are the chart's values of the suite's release.
var installValues = []string{"--set", "image.tag=e2e", "--set", "image.pullPolicy=Never", "--set", "replicas=2",
	"--set", "webhook.enabled=true", "--set", "refreshHook.enabled=true"}

// helmInstall installs the release into its namespace and waits until
// it is Ready.
func (s *env) helmInstall(ctx context.Context) error {
	args := append([]string{"install", release, s.chart, "--namespace", releaseNS, "--wait", "--timeout", "3m"}, installValues...)
	if out, err := s.helmRun(ctx, args...); err != nil {
		return fmt.Errorf("helm install: %w: %s\n%s", err, out, s.describePods(ctx, releaseNS))
	}
	return nil
}

// helmRun runs helm against the cluster.
func (s *env) helmRun(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.helm, append(args, "--kubeconfig", s.kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(s.dir, "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(s.dir, "helm-config"), "HELM_DATA_HOME="+filepath.Join(s.dir, "helm-data"))
	return cmd.CombinedOutput()
}

// describePods says what the pods of ns are doing, for failure messages.
func (s *env) describePods(ctx context.Context, ns string) string {
	pods, err := s.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
		}
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "; %s restarts %d", cs.Name, cs.RestartCount)
			if cs.State.Waiting != nil {
				fmt.Fprintf(&b, " waiting %s: %s", cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
			if cs.LastTerminationState.Terminated != nil {
				fmt.Fprintf(&b, " last exit %d %s", cs.LastTerminationState.Terminated.ExitCode, cs.LastTerminationState.Terminated.Message)
			}
			if cs.RestartCount > 0 && s.node != nil {
				fmt.Fprintf(&b, "\n  log: %s", strings.ReplaceAll(s.node.ContainerLog(ns, p.Name, string(p.UID), cs.Name, 15), "\n", "\n  log: "))
			}
		}
		b.WriteString("\n")
	}
	events, _ := s.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if events != nil {
		for _, ev := range events.Items {
			if ev.Type == corev1.EventTypeWarning {
				fmt.Fprintf(&b, "event %s %s: %s\n", ev.InvolvedObject.Name, ev.Reason, ev.Message)
			}
		}
	}
	return b.String()
}

// repoRoot is the repository that holds the working directory.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no go.mod above " + wd)
		}
	}
}

// eventually calls cond until it returns true, failing the test after
// timeout with the last message.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var msg string
	for time.Now().Before(deadline) {
		var ok bool
		if ok, msg = cond(); ok {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("after %s: %s", timeout, msg)
}
