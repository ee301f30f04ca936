// Package localcluster starts a real etcd and kube-apiserver on loopback,
// installs Watchword's CRDs and hands out clients. It backs both the
// integration tests and `watchword-dev`. The binaries are built from Go
// modules by hack/tools.sh; nothing is downloaded from anywhere else.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsEnv is the environment variable naming the folder that holds the
// kube-apiserver, etcd and kubectl binaries.
const AssetsEnv = "WATCHWORD_ASSETS"

// assetsRel is where hack/tools.sh links the binaries, relative to the
// repository root.
var assetsRel = filepath.Join(".cache", "tools", "bin")

// crdRel is where the generated CRDs live, relative to the repository root.
var crdRel = filepath.Join("config", "crd", "bases")

// Options configure a local cluster.
type Options struct {
	// AssetsDir holds kube-apiserver, etcd and kubectl. Empty means
	// $WATCHWORD_ASSETS, or .cache/tools/bin of the repository that
	// contains the working directory.
	AssetsDir string
	// CRDDir holds the CRD manifests. Empty means config/crd/bases of the
	// repository that contains the working directory.
	CRDDir string
	// APIServerArgs are extra kube-apiserver flags (name to values).
	APIServerArgs map[string][]string
	// ShowOutput attaches the control plane's output to this process's.
	ShowOutput bool
	// NoControllerManager skips kube-controller-manager (garbage
	// collection, namespaces, workload controllers), for runs that only
	// need the API.
	NoControllerManager bool
	// Restartable keeps the API server's certificates and etcd's data in
	// folders of the cluster's own, so that RestartAPIServer brings the
	// API server back with the same serving certificate, client CA and
	// service-account keys (clients made before the restart keep working
	// after it), and RestartEtcd brings etcd back on the same data.
	Restartable bool
	// NodeNetwork, when set, makes a control plane that a real node can
	// join (see NodeNetwork).
	NodeNetwork *NodeNetwork
}

// Cluster is a running local control plane.
type Cluster struct {
	env *envtest.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// AssetsDir is the folder the binaries were taken from.
	AssetsDir string

	kcm     *exec.Cmd
	cancel  context.CancelFunc
	tmpDirs []string
	// restartable: the API server's certificates and etcd's data live in
	// tmpDirs, which outlive a stop of either process.
	restartable bool
	// nodeNetwork is Options.NodeNetwork, and certDir the API server's
	// certificate folder when it is set.
	nodeNetwork *NodeNetwork
	certDir     string
}

// AssetsDir finds the folder of kube-apiserver and the other binaries:
// explicit, else $WATCHWORD_ASSETS, else .cache/tools/bin of the
// repository that holds the working directory.
func AssetsDir(explicit string) (string, error) {
	assets, err := resolveDir(explicit, os.Getenv(AssetsEnv), assetsRel, "kube-apiserver")
	if err != nil {
		return "", fmt.Errorf("finding kube-apiserver and etcd (run `make tools` to build them): %w", err)
	}
	return assets, nil
}

// Start starts etcd and kube-apiserver and installs the CRDs.
func Start(opts Options) (*Cluster, error) {
	assets, err := AssetsDir(opts.AssetsDir)
	if err != nil {
		return nil, err
	}
	crds, err := resolveDir(opts.CRDDir, "", crdRel, "")
	if err != nil {
		return nil, fmt.Errorf("finding the CRD manifests: %w", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{crds},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
		AttachControlPlaneOutput: opts.ShowOutput,
	}
	env.ControlPlane.APIServer = nil
	api := env.ControlPlane.GetAPIServer()
	var tmpDirs []string
	if opts.Restartable {
		// envtest would make both folders itself and remove them when the
		// process stops; a restart must find them again.
		env.ControlPlane.Etcd = &envtest.Etcd{}
		for _, dir := range []*string{&api.CertDir, &env.ControlPlane.Etcd.DataDir} {
			d, mkErr := os.MkdirTemp("", "watchword-controlplane-")
			if mkErr != nil {
				removeAll(tmpDirs)
				return nil, mkErr
			}
			*dir = d
			tmpDirs = append(tmpDirs, d)
		}
	}
	if opts.NodeNetwork != nil {
		if api.CertDir == "" {
			d, mkErr := os.MkdirTemp("", "watchword-controlplane-")
			if mkErr != nil {
				removeAll(tmpDirs)
				return nil, mkErr
			}
			api.CertDir = d
			tmpDirs = append(tmpDirs, d)
		}
		if err = configureNodeNetwork(api, opts.NodeNetwork, api.CertDir); err != nil {
			removeAll(tmpDirs)
			return nil, err
		}
	}
	for name, values := range opts.APIServerArgs {
		api.Configure().Set(name, values...)
	}
	cfg, err := env.Start()
	if err != nil {
		removeAll(tmpDirs)
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", assets, err)
	}
	c := &Cluster{env: env, Config: cfg, AssetsDir: assets, tmpDirs: tmpDirs, restartable: opts.Restartable,
		nodeNetwork: opts.NodeNetwork, certDir: api.CertDir}
	if !opts.NoControllerManager {
		ctx, cancel := context.WithCancel(context.Background())
		c.cancel = cancel
		if err := c.startControllerManager(ctx, opts.ShowOutput); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// RestartAPIServer stops kube-apiserver and starts it again on the same
// address, with etcd left running; the cluster must have been started
// Restartable. down is called while it is stopped (nil: none).
func (c *Cluster) RestartAPIServer(down func()) error {
	api := c.env.ControlPlane.APIServer
	if !c.restartable || api == nil {
		return errors.New("RestartAPIServer needs a cluster started with Options.Restartable")
	}
	// envtest sends SIGTERM and, after its stop timeout, SIGKILL (then
	// reporting the timeout): kube-apiserver drains open watches slowly.
	return restart("kube-apiserver", api.HostPort(), api.Stop, api.Start, down)
}

// RestartEtcd stops etcd and starts it again on the same data folder and
// client address, with kube-apiserver left running (its requests fail
// while etcd is away, and its etcd client reconnects afterwards); the
// cluster must have been started Restartable. down is called while etcd
// is stopped (nil: none).
func (c *Cluster) RestartEtcd(down func()) error {
	etcd := c.env.ControlPlane.Etcd
	if !c.restartable || etcd == nil || etcd.URL == nil {
		return errors.New("RestartEtcd needs a cluster started with Options.Restartable")
	}
	return restart("etcd", etcd.URL.Host, etcd.Stop, etcd.Start, down)
}

// restart stops one process of the control plane, waits until nothing
// answers on its address any more (a process that outlived envtest's stop
// timeout was sent SIGKILL, and its stop reported the timeout), calls
// down, and starts the process again with the settings it had.
func restart(name, addr string, stop, start func() error, down func()) error {
	stopErr := stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		_ = conn.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still answers on %s after being stopped (%v)", name, addr, stopErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if down != nil {
		down()
	}
	if err := start(); err != nil {
		return fmt.Errorf("starting %s again: %w", name, err)
	}
	return nil
}

// Stop stops the control plane and removes its data.
func (c *Cluster) Stop() error {
	if c.cancel != nil {
		c.cancel()
	}
	if c.kcm != nil {
		_ = c.kcm.Wait()
	}
	// The processes first: etcd may still be writing to its folder.
	err := c.env.Stop()
	removeAll(c.tmpDirs)
	return err
}

func removeAll(dirs []string) {
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// Kubeconfig returns a kubeconfig for an administrator of the cluster.
func (c *Cluster) Kubeconfig() ([]byte, error) {
	user, err := c.env.ControlPlane.AddUser(envtestAdmin(), nil)
	if err != nil {
		return nil, fmt.Errorf("adding an admin user: %w", err)
	}
	return user.KubeConfig()
}

// KubectlPath is the kubectl binary beside the control plane's.
func (c *Cluster) KubectlPath() string {
	return filepath.Join(c.AssetsDir, "kubectl")
}

// resolveDir picks the explicit folder, else the folder from the
// environment, else rel inside the repository that holds the working
// directory. When probe is set, the folder must contain that file.
func resolveDir(explicit, fromEnv, rel, probe string) (string, error) {
	for _, dir := range []string{explicit, fromEnv} {
		if dir != "" {
			return checkDir(dir, probe)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, rel)
		if _, err := checkDir(candidate, probe); err == nil {
			return candidate, nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	return "", fmt.Errorf("no %s above %s; set %s or the matching flag", rel, wd, AssetsEnv)
}

func checkDir(dir, probe string) (string, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return "", errors.New(dir + " is not a folder")
	}
	if probe != "" {
		if _, err := os.Stat(filepath.Join(dir, probe)); err != nil {
			return "", err
		}
	}
	return filepath.Abs(dir)
}

// ServiceAccountIssuer is the issuer of the cluster's service-account
// tokens.
func (c *Cluster) ServiceAccountIssuer() string {
	return c.env.ControlPlane.APIServer.SecureServing.URL("https", "/").String()
}

// ServiceAccountPublicKey is the PEM public key that verifies the cluster's
// service-account tokens.
func (c *Cluster) ServiceAccountPublicKey() ([]byte, error) {
	return os.ReadFile(filepath.Join(c.env.ControlPlane.APIServer.CertDir, "sa-signer.crt"))
}

// UserConfig returns a client configuration that authenticates with a
// client certificate as the named user.
func (c *Cluster) UserConfig(name string, groups ...string) (*rest.Config, error) {
	u, err := c.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, err
	}
	return u.Config(), nil
}
