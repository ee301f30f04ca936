package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// envtestAdmin is a user in the system:masters group.
func envtestAdmin() envtest.User {
	return envtest.User{Name: "watchword-admin", Groups: []string{"system:masters"}}
}

// controllers are the kube-controller-manager controllers the local
// control plane runs: the garbage collector (owned targets go with their
// ExternalSecret), namespace deletion, and the workload controllers, so
// that a restarted Deployment, StatefulSet or DaemonSet really rolls out
// (new ReplicaSets, new pods, status written by its own controller).
// There is no scheduler and no kubelet: pods stay Pending unless something
// binds them and reports them (the integration tests' test node does).
var controllers = []string{"garbagecollector", "namespace", "deployment", "replicaset", "statefulset", "daemonset"}

// startControllerManager runs kube-controller-manager with controllers.
func (c *Cluster) startControllerManager(ctx context.Context, showOutput bool) error {
	bin := filepath.Join(c.AssetsDir, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("kube-controller-manager not found beside kube-apiserver (run `make tools`): %w", err)
	}
	kc, err := c.Kubeconfig()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "watchword-kcm-")
	if err != nil {
		return err
	}
	c.tmpDirs = append(c.tmpDirs, dir)
	kcPath := filepath.Join(dir, "kubeconfig")
	if err = os.WriteFile(kcPath, kc, 0o600); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + kcPath,
		"--authentication-kubeconfig=" + kcPath,
		"--authorization-kubeconfig=" + kcPath,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + dir,
		"--concurrent-gc-syncs=5",
	}
	if c.nodeNetwork != nil {
		args[3] = "--controllers=" + strings.Join(append(slices.Clone(controllers), nodeControllers...), ",")
		args = append(args,
			// Published to every namespace as kube-root-ca.crt, which
			// pods' token volumes carry to verify the API server.
			"--root-ca-file="+filepath.Join(c.certDir, "apiserver.crt"),
			"--service-cluster-ip-range="+c.nodeNetwork.ServiceCIDR)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	if showOutput {
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	c.kcm = cmd
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
