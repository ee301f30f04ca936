// Package node runs a real single-node Kubernetes node for the end-to-end
// tests, beside a control plane of internal/localcluster started with a
// NodeNetwork: containerd with runc and the bridge CNI plugin, kubelet,
// kube-proxy (iptables) and kube-scheduler. Every binary comes from the
// package registries: kubelet, kube-scheduler and kube-proxy are built from
// the k8s.io/kubernetes module and containerd, runc, the CNI plugins and
// iptables are Debian's packages unpacked without installing them, both by
// `./hack/tools.sh node` (make tools-node) into .cache/tools.
//
// No image can be pulled: every image a pod uses, the sandbox's pause image
// included, is written locally (internal/imagebuild) and imported with
// ImportImage; pods use a non-latest tag and imagePullPolicy IfNotPresent
// or Never, and the kubelet's image garbage collection is off.
//
// Running a node needs root, cgroups and iptables. Check says what is
// missing; tests skip with that reason unless $WATCHWORD_REQUIRE_NODE is
// set, as `make test` does, and then fail. Stop removes everything Start
// made: processes (by pid, and the containerd shims found by their
// containerd address), mounts, network namespaces, the bridge, the
// iptables rules, the node address and the folders.
package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RequireEnv makes a missing node a failure instead of a reason to skip.
const RequireEnv = "WATCHWORD_REQUIRE_NODE"

// RootEnv names the folder holding Debian's unpacked packages (usr/bin/
// containerd and so on), instead of .cache/tools/node/root above the
// working directory.
const RootEnv = "WATCHWORD_NODE_ROOT"

// The node's addresses. They are in 198.18.0.0/15, the range set aside
// for network tests (RFC 2544), so that they clash with no network the
// machine is on; nothing in it is routed off the machine (see Start).
const (
	// Name of the Node.
	Name = "watchword-e2e-node"
	// Address is the node's address, put on the loopback interface; the
	// control plane listens there too, so that pods reach it.
	Address = "198.18.0.1"
	// PodCIDR is the range of pod addresses, on the bridge.
	PodCIDR = "198.18.1.0/24"
	// ServiceCIDR is the range of Service cluster IPs.
	ServiceCIDR = "198.18.2.0/24"
	// testRange covers all three: pod traffic to anything outside it is
	// dropped.
	testRange = "198.18.0.0/16"
	bridge    = "wwe2e0"
)

// Required reports whether $WATCHWORD_REQUIRE_NODE is set.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// Binaries are the node's programs.
type Binaries struct {
	// Assets holds kubelet, kube-scheduler and kube-proxy.
	Assets string
	// Root is the unpacked Debian packages.
	Root string
}

func (b Binaries) containerd() string { return filepath.Join(b.Root, "usr/bin/containerd") }
func (b Binaries) ctr() string        { return filepath.Join(b.Root, "usr/bin/ctr") }
func (b Binaries) runc() string       { return filepath.Join(b.Root, "usr/sbin/runc") }
func (b Binaries) cniDir() string     { return filepath.Join(b.Root, "usr/lib/cni") }
func (b Binaries) libDir() string     { return filepath.Join(b.Root, "usr/lib/x86_64-linux-gnu") }

// Check says why a node cannot run here, or returns nil.
func Check(b Binaries) error {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return fmt.Errorf("a node runs on linux/amd64 only, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if os.Geteuid() != 0 {
		return errors.New("a node needs root (containers, mounts, cgroups, iptables)")
	}
	for _, f := range []string{
		filepath.Join(b.Assets, "kubelet"), filepath.Join(b.Assets, "kube-proxy"), filepath.Join(b.Assets, "kube-scheduler"),
		b.containerd(), b.ctr(), b.runc(), filepath.Join(b.cniDir(), "bridge"),
		filepath.Join(b.Root, "usr/sbin/xtables-nft-multi"),
	} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s is missing: run `make tools-node`", f)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		if _, err2 := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err2 != nil {
			return errors.New("no cgroup file system at /sys/fs/cgroup")
		}
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the ip command (iproute2) is missing")
	}
	return nil
}

// Node is a running node.
type Node struct {
	bin   Binaries
	dir   string
	kube  kubernetes.Interface
	procs []*exec.Cmd
	// exited receives the name of a process that ended before Stop.
	exited chan string
	// undo runs in reverse order at Stop.
	undo []func() error
	// netnsBefore are the named network namespaces that existed before
	// Start: the others are the pods'.
	netnsBefore []string
}

// New prepares a node: it checks that one can run here and sets up its
// network (the node's address, which the control plane must listen on, so
// New comes before the control plane starts). Start runs it; Stop undoes
// both.
func New(b Binaries) (n *Node, err error) {
	if err = Check(b); err != nil {
		return nil, err
	}
	if err = reclaim(b); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "wwnode-")
	if err != nil {
		return nil, err
	}
	n = &Node{bin: b, dir: dir, exited: make(chan string, 8), netnsBefore: netnsNames()}
	forward, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err == nil {
		err = n.writeOwner(forward)
	}
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if err := n.network(); err != nil {
		return nil, errors.Join(err, n.stop(true))
	}
	return n, nil
}

// Start starts containerd, kubelet, kube-proxy and kube-scheduler against
// the API server that kubeconfig reaches, which must have been started
// with a NodeNetwork of Address and ServiceCIDR, and waits until the node
// is Ready. images are tarballs imported before kubelet starts; one must
// hold the pause image, pauseRef.
func (n *Node) Start(ctx context.Context, kubeconfig []byte, admin *rest.Config, pauseRef string, images []string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (logs in %s)", err, n.dir)
		}
	}()
	if n.kube, err = kubernetes.NewForConfig(admin); err != nil {
		return err
	}
	kc := filepath.Join(n.dir, "kubeconfig")
	if err = os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		return err
	}
	if err = n.startContainerd(ctx, pauseRef); err != nil {
		return err
	}
	for _, img := range images {
		if err = n.ImportImage(ctx, img); err != nil {
			return err
		}
	}
	if err = n.startKubelet(kc); err != nil {
		return err
	}
	if err = n.startProxy(kc); err != nil {
		return err
	}
	if err = n.start("kube-scheduler", filepath.Join(n.bin.Assets, "kube-scheduler"),
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0"); err != nil {
		return err
	}
	return n.waitReady(ctx)
}

// Dir is the node's folder, with each process's log (NAME.log).
func (n *Node) Dir() string { return n.dir }

// logTail is the end of a process's log.
func (n *Node) logTail(name string, lines int) string {
	data, _ := os.ReadFile(filepath.Join(n.dir, name+".log"))
	all := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// ContainerLog returns the last lines of the newest log of a pod's
// container, from the kubelet's log folder.
func (n *Node) ContainerLog(ns, pod, uid, container string, lines int) string {
	files, _ := filepath.Glob(filepath.Join(n.dir, "pod-logs", ns+"_"+pod+"_"+uid, container, "*.log"))
	if len(files) == 0 {
		return ""
	}
	slices.Sort(files)
	data, err := os.ReadFile(files[len(files)-1])
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// env is the environment of the node's processes: the unpacked binaries
// and libraries first.
func (n *Node) env() []string {
	return append(os.Environ(),
		"PATH="+filepath.Join(n.dir, "bin")+":"+filepath.Join(n.bin.Root, "usr/bin")+":"+filepath.Join(n.bin.Root, "usr/sbin")+":"+os.Getenv("PATH"),
		"LD_LIBRARY_PATH="+n.bin.libDir(),
		"XTABLES_LIBDIR="+filepath.Join(n.bin.libDir(), "xtables"),
	)
}

// start runs a process of the node in its own process group, its output
// in NAME.log.
func (n *Node) start(name, path string, args ...string) error {
	logf, err := os.Create(filepath.Join(n.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = n.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	n.procs = append(n.procs, cmd)
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		n.exited <- name
	}()
	return nil
}

// run runs a command of the node to its end.
func (n *Node) run(ctx context.Context, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = n.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(path), strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// iptables runs iptables of the unpacked packages (the nf_tables one,
// Debian's default).
func (n *Node) iptables(args ...string) error {
	return n.run(context.Background(), filepath.Join(n.dir, "bin", "iptables"), args...)
}

// network puts the node's address on lo, lets the host forward the pods'
// traffic, and keeps that traffic on the machine: whatever a pod sends to
// an address outside the test range is dropped. The bin folder links the
// iptables commands kube-proxy and the CNI plugins look for.
func (n *Node) network() error {
	binDir := filepath.Join(n.dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	multi := filepath.Join(n.bin.Root, "usr/sbin/xtables-nft-multi")
	for _, name := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		if err := os.Symlink(multi, filepath.Join(binDir, name)); err != nil {
			return err
		}
	}
	if out, err := exec.Command("ip", "addr", "add", Address+"/32", "dev", "lo").CombinedOutput(); err != nil {
		return fmt.Errorf("adding %s to lo (is it in use by something other than a node?): %w: %s", Address, err, bytes.TrimSpace(out))
	}
	n.undo = append(n.undo, func() error { return exec.Command("ip", "addr", "del", Address+"/32", "dev", "lo").Run() })
	const fwd = "/proc/sys/net/ipv4/ip_forward"
	old, err := os.ReadFile(fwd)
	if err != nil {
		return err
	}
	if err := os.WriteFile(fwd, []byte("1"), 0o644); err != nil {
		return fmt.Errorf("turning on IPv4 forwarding: %w", err)
	}
	n.undo = append(n.undo, func() error { return os.WriteFile(fwd, old, 0o644) })
	rule := []string{"FORWARD", "-s", testRange, "!", "-d", testRange, "-j", "DROP"}
	if err := n.iptables(append([]string{"-I"}, rule...)...); err != nil {
		return err
	}
	n.undo = append(n.undo, func() error { return n.iptables(append([]string{"-D"}, rule...)...) })
	// The bridge is made by the CNI plugin with the first pod.
	n.undo = append(n.undo, func() error {
		if exec.Command("ip", "link", "show", bridge).Run() != nil {
			return nil
		}
		return exec.Command("ip", "link", "del", bridge).Run()
	})
	return nil
}

// containerdConfig is containerd's configuration (version 2, containerd
// 1.6): its state in the node's folder, runc through the v2 shim with
// cgroupfs, the CNI bridge, and restrict_oom_score_adj, since root here
// may lack CAP_SYS_RESOURCE and runc would fail to raise a container's
// oom_score_adj.
const containerdConfig = `version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %[5]q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
`

// cniConfig is the pods' network: a bridge with host-local addresses,
// the default route through the bridge, and no masquerade (nothing leaves
// the machine).
const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": "watchword-e2e",
  "plugins": [
    {"type": "bridge", "bridge": %[1]q, "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %[2]q, "ranges": [[{"subnet": %[3]q}]]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`

func (n *Node) sock() string { return filepath.Join(n.dir, "containerd.sock") }

func (n *Node) startContainerd(ctx context.Context, pauseRef string) error {
	netDir := filepath.Join(n.dir, "net.d")
	if err := os.MkdirAll(netDir, 0o755); err != nil {
		return err
	}
	cni := fmt.Sprintf(cniConfig, bridge, filepath.Join(n.dir, "ipam"), PodCIDR)
	if err := os.WriteFile(filepath.Join(netDir, "10-watchword-e2e.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	cfg := fmt.Sprintf(containerdConfig, filepath.Join(n.dir, "containerd"), filepath.Join(n.dir, "containerd-state"), n.sock(),
		pauseRef, n.bin.runc(), n.bin.cniDir(), netDir)
	cfgPath := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	if err := n.start("containerd", n.bin.containerd(), "--config", cfgPath); err != nil {
		return err
	}
	return poll(ctx, 30*time.Second, "containerd to answer", func() error {
		return n.run(ctx, n.bin.ctr(), "--address", n.sock(), "version")
	})
}

// ImportImage imports an image tarball (docker or OCI) for the kubelet.
func (n *Node) ImportImage(ctx context.Context, tarball string) error {
	return n.run(ctx, n.bin.ctr(), "--address", n.sock(), "-n", "k8s.io", "images", "import", tarball)
}

// kubeletConfig: cgroup v1 with the cgroupfs driver, no swap check, no
// image garbage collection (the images cannot be pulled again), eviction
// only when nearly full, logs and state in the node's folder, and
// requests from the API server (logs, exec) trusted without a client
// certificate check beyond TLS: this is a test node on loopback.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%[1]s
address: %[2]s
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
imageMinimumGCAge: 87600h
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
podLogsDir: %[3]q
clusterDomain: cluster.local
resolvConf: ""
maxPods: 110
serializeImagePulls: false
enforceNodeAllocatable: ["pods"]
rotateCertificates: false
staticPodPath: ""
`

func (n *Node) startKubelet(kc string) error {
	cfg := fmt.Sprintf(kubeletConfig, n.sock(), Address, filepath.Join(n.dir, "pod-logs"))
	cfgPath := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	root := filepath.Join(n.dir, "kubelet")
	return n.start("kubelet", filepath.Join(n.bin.Assets, "kubelet"),
		"--config="+cfgPath, "--kubeconfig="+kc, "--root-dir="+root, "--cert-dir="+filepath.Join(root, "pki"),
		"--hostname-override="+Name, "--node-ip="+Address,
		// The kubelet would lower its own oom_score_adj, which root here
		// may not do.
		"--oom-score-adj=0", "--v=2")
}

const proxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %[1]q}
hostnameOverride: %[2]s
bindAddress: %[3]s
clusterCIDR: %[4]s
healthzBindAddress: "127.0.0.1:10256"
metricsBindAddress: "127.0.0.1:10249"
iptables: {masqueradeAll: true, localhostNodePorts: false}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`

// startProxy runs kube-proxy. masqueradeAll: a pod that reaches a pod on
// the same bridge through a Service gets the answer back through the host,
// where the address translation is undone.
func (n *Node) startProxy(kc string) error {
	cfgPath := filepath.Join(n.dir, "kube-proxy.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, proxyConfig, kc, Name, Address, PodCIDR), 0o644); err != nil {
		return err
	}
	n.undo = append(n.undo, func() error {
		// kube-proxy removes the rules it wrote; the kubelet's few
		// chains (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT)
		// go after.
		err := n.run(context.Background(), filepath.Join(n.bin.Assets, "kube-proxy"), "--cleanup")
		return errors.Join(err, n.removeKubeChains())
	})
	return n.start("kube-proxy", filepath.Join(n.bin.Assets, "kube-proxy"), "--config="+cfgPath)
}

// removeKubeChains removes every KUBE- chain left in the filter, nat and
// mangle tables, of both iptables back ends, with the rules that jump to
// them.
func (n *Node) removeKubeChains() error {
	var errs []error
	for _, multi := range []string{"xtables-nft-multi", "xtables-legacy-multi"} {
		bin := filepath.Join(n.bin.Root, "usr/sbin", multi)
		for _, table := range []string{"filter", "nat", "mangle"} {
			cmd := exec.Command(bin, "iptables-save", "-t", table)
			cmd.Env = n.env()
			out, err := cmd.Output()
			if err != nil {
				continue // the table does not exist in this back end
			}
			var chains []string
			for line := range strings.Lines(string(out)) {
				f := strings.Fields(line)
				switch {
				case len(f) > 0 && strings.HasPrefix(f[0], ":KUBE-"):
					chains = append(chains, strings.TrimPrefix(f[0], ":"))
				case len(f) > 2 && f[0] == "-A" && !strings.HasPrefix(f[1], "KUBE-") && slices.ContainsFunc(f, func(w string) bool { return strings.HasPrefix(w, "KUBE-") }):
					// A jump from a built-in chain: the same rule with -D.
					args := append([]string{"iptables", "-t", table, "-D"}, f[1:]...)
					errs = append(errs, n.run(context.Background(), bin, unquote(args)...))
				}
			}
			for _, c := range chains {
				errs = append(errs, n.run(context.Background(), bin, "iptables", "-t", table, "-F", c))
			}
			for _, c := range chains {
				errs = append(errs, n.run(context.Background(), bin, "iptables", "-t", table, "-X", c))
			}
		}
	}
	return errors.Join(errs...)
}

// unquote drops the quotes iptables-save puts around a comment, for a
// rule that is passed back as arguments. Comments with spaces are split by
// strings.Fields; they are joined again here.
func unquote(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "\"") {
			for !strings.HasSuffix(a, "\"") || a == "\"" {
				i++
				if i == len(args) {
					break
				}
				a += " " + args[i]
			}
			a = strings.Trim(a, "\"")
		}
		out = append(out, a)
	}
	return out
}

// waitReady waits for the Node to be Ready and to carry no taint.
func (n *Node) waitReady(ctx context.Context) error {
	return poll(ctx, 2*time.Minute, "the node to be Ready", func() error {
		select {
		case name := <-n.exited:
			return fmt.Errorf("%s exited: %s", name, n.logTail(name, 5))
		default:
		}
		node, err := n.kube.CoreV1().Nodes().Get(ctx, Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return fmt.Errorf("Ready is %s: %s", c.Status, c.Message)
			}
		}
		if len(node.Spec.Taints) > 0 {
			return fmt.Errorf("taints %v", node.Spec.Taints)
		}
		return nil
	})
}

// poll calls f until it returns nil, for at most d.
func poll(ctx context.Context, d time.Duration, what string, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop stops the node and removes everything it made.
func (n *Node) Stop() error { return n.stop(true) }

func (n *Node) stop(removeDir bool) error {
	var errs []error
	// The pods' containers first, while containerd still answers, so that
	// their shims exit and their mounts and network namespaces go.
	for i := len(n.procs) - 1; i >= 0; i-- {
		if filepath.Base(n.procs[i].Path) == "kubelet" {
			stopProcess(n.procs[i])
		}
	}
	if n.procs != nil {
		errs = append(errs, n.removeContainers())
	}
	for i := len(n.procs) - 1; i >= 0; i-- {
		stopProcess(n.procs[i])
	}
	// Shims whose container could not be removed: they name containerd's
	// address on their command line.
	errs = append(errs, killShims(n.sock()))
	for i := len(n.undo) - 1; i >= 0; i-- {
		errs = append(errs, n.undo[i]())
	}
	errs = append(errs, unmountUnder(n.dir))
	for _, ns := range netnsNames() {
		if !slices.Contains(n.netnsBefore, ns) && strings.HasPrefix(ns, "cni-") {
			errs = append(errs, exec.Command("ip", "netns", "del", ns).Run())
		}
	}
	errs = append(errs, removeCgroups())
	removeContainerLogLinks(n.dir)
	if removeDir {
		errs = append(errs, os.RemoveAll(n.dir))
	}
	return errors.Join(errs...)
}

// removeContainers stops and removes every pod sandbox and container
// through containerd's CRI, as the kubelet would.
func (n *Node) removeContainers() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctr := func(args ...string) ([]string, error) {
		cmd := exec.CommandContext(ctx, n.bin.ctr(), append([]string{"--address", n.sock(), "-n", "k8s.io"}, args...)...)
		cmd.Env = n.env()
		out, err := cmd.Output()
		return strings.Fields(string(out)), err
	}
	tasks, err := ctr("tasks", "ls", "-q")
	if err != nil {
		return nil // containerd is not running: nothing to remove through it
	}
	var errs []error
	for _, id := range tasks {
		_, _ = ctr("tasks", "kill", "-s", "SIGKILL", id)
	}
	for _, id := range tasks {
		_ = poll(ctx, 10*time.Second, "task "+id+" to stop", func() error { _, err := ctr("tasks", "delete", id); return err })
	}
	if left, _ := ctr("tasks", "ls", "-q"); len(left) > 0 {
		errs = append(errs, fmt.Errorf("tasks %v are still there after being killed", left))
	}
	containers, _ := ctr("containers", "ls", "-q")
	for _, id := range containers {
		if _, err := ctr("containers", "delete", id); err != nil {
			errs = append(errs, fmt.Errorf("removing container %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// stopProcess sends SIGTERM to the process group, then SIGKILL after 10 s.
func stopProcess(cmd *exec.Cmd) {
	if cmd.Process == nil || cmd.ProcessState != nil {
		return
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(cmd.Process.Pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// killShims kills the containerd shims started for the containerd at sock.
func killShims(sock string) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") && slices.Contains(args, sock) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// unmountUnder unmounts every mount point under dir, deepest first.
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			points = append(points, fields[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// netnsNames lists the named network namespaces.
func netnsNames() []string {
	entries, _ := os.ReadDir("/var/run/netns")
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// removeCgroups removes the kubelet's cgroups (kubepods, in every
// hierarchy), children first; they are empty once the containers are gone.
func removeCgroups() error {
	hierarchies, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var errs []error
	// Processes of containers the kubelet started and containerd could
	// not remove are still in them: they are ours, by their cgroup.
	_ = filepath.WalkDir("/sys/fs/cgroup/pids/kubepods", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			data, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	for _, h := range hierarchies {
		root := filepath.Join("/sys/fs/cgroup", h.Name(), "kubepods")
		if _, err := os.Stat(root); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeContainerLogLinks removes the links the kubelet made in
// /var/log/containers (a fixed folder) to logs under dir.
func removeContainerLogLinks(dir string) {
	entries, _ := os.ReadDir("/var/log/containers")
	for _, e := range entries {
		p := filepath.Join("/var/log/containers", e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, dir+"/") {
			_ = os.Remove(p)
		}
	}
}

// LookupBinaries finds the node's binaries: assets (kubelet and the
// rest, beside kube-apiserver) and the unpacked packages in
// $WATCHWORD_NODE_ROOT or .cache/tools/node/root above the working
// directory.
func LookupBinaries(assets string) Binaries {
	b := Binaries{Assets: assets, Root: os.Getenv(RootEnv)}
	if b.Root == "" {
		wd, _ := os.Getwd()
		for d := wd; ; d = filepath.Dir(d) {
			c := filepath.Join(d, ".cache", "tools", "node", "root")
			if _, err := os.Stat(c); err == nil {
				b.Root = c
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return b
}
