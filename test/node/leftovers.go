package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile, in a node's folder, names the process that runs the node and
// what New found before it changed anything, so that the next New can tell
// a node that is still running from one whose process died without Stop
// (a test binary killed by its timeout or a signal) and undo the latter.
const ownerFile = "owner.json"

type owner struct {
	PID int `json:"pid"`
	// Start is the process's start time (field 22 of /proc/PID/stat), so
	// that a reused PID is not taken for the owner.
	Start string `json:"start"`
	// Forward is ip_forward before the node set it.
	Forward string `json:"forward"`
	// NetnsBefore are the named network namespaces that are not the pods'.
	NetnsBefore []string `json:"netnsBefore"`
}

func processStart(pid int) string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 19 {
			return f[19]
		}
	}
	return ""
}

func (n *Node) writeOwner(forward []byte) error {
	o := owner{PID: os.Getpid(), Start: processStart(os.Getpid()), Forward: strings.TrimSpace(string(forward)), NetnsBefore: n.netnsBefore}
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.dir, ownerFile), data, 0o600)
}

// reclaim undoes every node left behind by a process that died without
// Stop, and refuses when a node's owner is still running: two nodes cannot
// share the address and the bridge.
func reclaim(b Binaries) error {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "wwnode-*"))
	dead := map[string]owner{}
	// Every owner is checked before anything is undone: the address, the
	// bridge and the chains are shared, and a live node needs them.
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not a node's folder, or one from before owner files
		}
		var o owner
		if err := json.Unmarshal(data, &o); err != nil {
			continue
		}
		if o.PID > 0 && o.Start != "" && processStart(o.PID) == o.Start {
			return fmt.Errorf("another node is running, started by process %d (its folder %s)", o.PID, dir)
		}
		dead[dir] = o
	}
	var errs []error
	for dir, o := range dead {
		errs = append(errs, undoLeftover(b, dir, o))
	}
	return errors.Join(errs...)
}

// undoLeftover stops what a dead owner's node left running and removes
// what it made, as Stop would have, best effort: what cannot be undone is
// reported by the network set-up that follows (the address, the bridge).
func undoLeftover(b Binaries, dir string, o owner) error {
	killMentioning(dir)
	old := &Node{bin: b, dir: dir, netnsBefore: o.NetnsBefore}
	forward := o.Forward
	if forward == "" {
		forward = "0"
	}
	old.undo = []func() error{
		func() error { _ = exec.Command("ip", "addr", "del", Address+"/32", "dev", "lo").Run(); return nil },
		func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte(forward), 0o644) },
		func() error {
			_ = old.iptables("-D", "FORWARD", "-s", testRange, "!", "-d", testRange, "-j", "DROP")
			return nil
		},
		func() error {
			if exec.Command("ip", "link", "show", bridge).Run() == nil {
				return exec.Command("ip", "link", "del", bridge).Run()
			}
			return nil
		},
		old.removeKubeChains,
	}
	if err := old.stop(true); err != nil {
		return fmt.Errorf("undoing the node a dead process left in %s: %w", dir, err)
	}
	return nil
}

// killMentioning kills every process whose command line names dir:
// containerd, kubelet, kube-proxy and kube-scheduler of a dead owner's
// node, and its containerd shims (they name its socket). The pods'
// processes are found later by their cgroups.
func killMentioning(dir string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir+"/") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
