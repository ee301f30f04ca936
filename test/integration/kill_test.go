package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/operator"
)

// These tests run `watchword controller` as separate processes, built as a
// user builds them, and kill them with SIGKILL: no clean shutdown, no
// release of the lease, calls cut off mid-flight.

// controllerProcess is one `watchword controller` process.
type controllerProcess struct {
	cmd     *exec.Cmd
	metrics string // http://addr/metrics
	mu      sync.Mutex
	out     bytes.Buffer
	done    chan struct{}
}

func (p *controllerProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *controllerProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// kill sends SIGKILL and waits for the process to end.
func (p *controllerProcess) kill(t *testing.T) {
	t.Helper()
	must(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
}

// startController starts `watchword controller` of class with extra
// flags, with its metrics on a free loopback port; it is killed when the
// test ends.
func startController(t *testing.T, class string, extra ...string) *controllerProcess {
	t.Helper()
	bin := watchwordBinary(t)
	kc, err := cluster.Kubeconfig()
	must(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(kubeconfig, kc, 0o600))
	addr, err := freeLoopbackAddr()
	must(t, err)
	args := append([]string{"controller", "--kubeconfig", kubeconfig, "--controller-class", class,
		"--metrics-bind-address", addr, "--health-probe-bind-address", "0"}, extra...)
	p := &controllerProcess{metrics: "http://" + addr + "/metrics", done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	must(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of watchword controller %s:\n%s", strings.Join(args[3:], " "), tail(p.output(), 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// scrape reads the sum of every sample of the named metrics from the
// process's metrics endpoint; ok is false when it could not be read.
func (p *controllerProcess) scrape(names ...string) (map[string]float64, bool) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(p.metrics)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, n := range names {
			if !strings.HasPrefix(line, n+" ") && !strings.HasPrefix(line, n+"{") {
				continue
			}
			f := strings.Fields(line)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				out[n] += v
			}
		}
	}
	return out, sc.Err() == nil
}

const (
	reconcileTotal = "controller_runtime_reconcile_total"
	leaderStatus   = "leader_election_master_status"
)

// Serial: its controllers hold a 4 s lease with a 3 s renew deadline, which
// the parallel tests' load could make the leader lose before the kill.
func TestLeaderFailoverAfterSIGKILL(t *testing.T) {
	// Outcome: two controller processes of one class with leader election
	// (4 s lease). The standby runs no reconcile while it does not hold
	// the lease; after the leader is killed with SIGKILL (no release),
	// the standby takes the lease and syncs a new ExternalSecret. The
	// takeover is timed from outside: from the kill to the lease's new
	// holder, and to the new ExternalSecret's Ready.
	ns := newNamespace(t, nil)
	class := "failover-" + ns
	lease := operator.LeaderElectionID(class)
	election := []string{"--leader-elect", "--leader-election-namespace", ns, "--leader-election-lease-duration", "4s",
		"--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "500ms"}
	classStore(t, ns, "store", class, "value-before")

	leader := startController(t, class, election...)
	var first string
	eventually(t, 60*time.Second, func() (bool, string) {
		first = leaseHolder(t, ns, lease)
		return first != "", "no process holds the lease yet"
	})
	standby := startController(t, class, election...)
	newES(t, ns, "before", "store", withData("v", "k", ""))
	waitSecretData(t, ns, "before", map[string]string{"v": "value-before"})
	eventually(t, 60*time.Second, func() (bool, string) {
		m, ok := standby.scrape(reconcileTotal, leaderStatus)
		return ok, fmt.Sprintf("the standby's metrics are not served yet: %v", m)
	})
	if leaseHolder(t, ns, lease) != first {
		t.Fatal("the lease changed hands before the leader was killed")
	}

	killed := time.Now()
	leader.kill(t)
	newES(t, ns, "after", "store", withData("v", "k", ""))
	var takeover time.Duration
	var beforeLease map[string]float64
	eventually(t, 60*time.Second, func() (bool, string) {
		m, ok := standby.scrape(reconcileTotal, leaderStatus)
		holder := leaseHolder(t, ns, lease)
		if holder != "" && holder != first {
			takeover = time.Since(killed)
			return true, ""
		}
		if ok && m[leaderStatus] == 0 {
			beforeLease = m
		}
		return false, fmt.Sprintf("the lease is still held by %q", holder)
	})
	waitReady(t, ns, "after")
	synced := time.Since(killed)
	t.Logf("leader SIGKILLed (4 s lease): the standby held the lease %s later and synced a new ExternalSecret %s after the kill; reconciles by the standby before it held the lease: %.0f",
		takeover.Round(10*time.Millisecond), synced.Round(10*time.Millisecond), beforeLease[reconcileTotal])
	if beforeLease == nil {
		t.Fatal("the standby's metrics were never read while it did not lead")
	}
	if beforeLease[reconcileTotal] != 0 {
		t.Fatalf("the standby ran %.0f reconciles before it held the lease", beforeLease[reconcileTotal])
	}
	m, _ := standby.scrape(reconcileTotal, leaderStatus)
	if m[leaderStatus] != 1 || m[reconcileTotal] == 0 {
		t.Fatalf("after the takeover the standby reports leader status %.0f and %.0f reconciles", m[leaderStatus], m[reconcileTotal])
	}
}

// envInt is the whole number in the environment variable, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("$%s=%q: want a whole number of at least 1", name, v)
	}
	return n
}

func TestSIGKILLMidSyncConverges(t *testing.T) {
	parallel(t)
	// Outcome: a controller killed with SIGKILL while it syncs N
	// ExternalSecrets and publishes M PushSecrets (200 and 20 here;
	// $WATCHWORD_KILL_EXTERNALSECRETS and $WATCHWORD_KILL_PUSHSECRETS
	// for more), whose data then changes while it is down, is started
	// again: every target and every remote secret converges to the
	// newest data, none is lost, and none is left with an older value.
	nES := envInt(t, "WATCHWORD_KILL_EXTERNALSECRETS", 200)
	nPS := envInt(t, "WATCHWORD_KILL_PUSHSECRETS", 20)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	class := "kill-" + ns
	ctx := context.Background()

	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{
			// Slow enough that the sync takes seconds: the kill lands in
			// the middle of it.
			Latency: &metav1.Duration{Duration: 200 * time.Millisecond}}}}}
	for i := range nES {
		store.Spec.Fake.Data = append(store.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: fmt.Sprintf("k%d", i), Value: "old"})
	}
	must(t, k8s.Create(ctx, store))
	// A PushSecret's destination without a configRef goes to the store
	// named "default".
	publisherStore(t, ns, "default", remote)
	updateStore(t, ns, "default", func(s *v1alpha1.SecretStore) { s.Spec.Controller = class })
	for i := range nPS {
		createSecret(t, ns, fmt.Sprintf("src%d", i), map[string]string{"v": "old"})
	}

	for i := range nES {
		newES(t, ns, fmt.Sprintf("es%d", i), "store", withData("v", fmt.Sprintf("k%d", i), ""))
	}
	for i := range nPS {
		newPush(t, ns, fmt.Sprintf("p%d", i), fmt.Sprintf("src%d", i), pushTo(fmt.Sprintf("d%d", i)), pushKey("v", "v"))
	}
	first := startController(t, class)
	// Kill it mid-way: once a fifth of the targets exist.
	var atKill int
	eventually(t, 3*time.Minute, func() (bool, string) {
		atKill = countSecrets(t, ns, "es")
		return atKill >= nES/5, fmt.Sprintf("%d of %d targets written", atKill, nES)
	})
	first.kill(t)
	atKill = countSecrets(t, ns, "es")
	published := countSecrets(t, remote, "d")
	if atKill == nES {
		t.Fatalf("every target was written before the kill: the kill was not mid-sync")
	}

	// While it is down, every remote value and every source changes.
	updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) {
		for i := range s.Spec.Fake.Data {
			s.Spec.Fake.Data[i].Value = "new"
		}
	})
	for i := range nPS {
		updateSecret(t, ns, fmt.Sprintf("src%d", i), func(s *corev1.Secret) { s.Data = map[string][]byte{"v": []byte("new")} })
	}

	restarted := time.Now()
	startController(t, class)
	eventually(t, 5*time.Minute, func() (bool, string) {
		n, bad := valuesOf(t, ns, "es", "new")
		m, mbad := valuesOf(t, remote, "d", "new")
		return n == nES && bad == 0 && m == nPS && mbad == 0,
			fmt.Sprintf("%d of %d targets and %d of %d remote secrets hold the newest data (%d and %d hold another)", n, nES, m, nPS, bad, mbad)
	})
	t.Logf("killed with %d of %d targets and %d of %d remote secrets written; after the restart all held the newest data %s later",
		atKill, nES, published, nPS, time.Since(restarted).Round(100*time.Millisecond))
	// Nothing stale comes back once converged.
	consistently(t, 3*time.Second, func() (bool, string) {
		n, bad := valuesOf(t, ns, "es", "new")
		m, mbad := valuesOf(t, remote, "d", "new")
		return n == nES && bad == 0 && m == nPS && mbad == 0, "a target or remote secret went back to older data"
	})
}

// countSecrets counts the Secrets of ns whose name starts with prefix.
func countSecrets(t *testing.T, ns, prefix string) int {
	t.Helper()
	n, bad := valuesOf(t, ns, prefix, "")
	return n + bad
}

// valuesOf counts the Secrets of ns named prefix<number> whose key "v"
// holds want, and those that hold anything else.
func valuesOf(t *testing.T, ns, prefix, want string) (match, other int) {
	t.Helper()
	var list corev1.SecretList
	must(t, k8s.List(context.Background(), &list, client.InNamespace(ns)))
	for _, s := range list.Items {
		rest, ok := strings.CutPrefix(s.Name, prefix)
		if _, err := strconv.Atoi(rest); !ok || err != nil {
			continue
		}
		if string(s.Data["v"]) == want {
			match++
		} else {
			other++
		}
	}
	return match, other
}
