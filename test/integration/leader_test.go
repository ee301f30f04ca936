package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/operator"
)

// leaseDuration is long next to the retry period: a successor that takes
// the lease within half of it can only have found it released.
const (
	leaseDuration = 12 * time.Second
	renewDeadline = 8 * time.Second
	retryPeriod   = 200 * time.Millisecond
)

// replica is one operator instance with leader election, in this process.
type replica struct {
	name    string
	elected <-chan struct{}
	stop    context.CancelFunc
	stopped chan struct{} // closed when Start returned, with err
	err     error
}

func (r *replica) isElected() bool {
	select {
	case <-r.elected:
		return true
	default:
		return false
	}
}

// startReplica starts an operator of the class whose lease lives in ns; it
// is stopped when the test ends.
func startReplica(t *testing.T, ns, class string, n int) *replica {
	t.Helper()
	return startReplicaWith(t, ns, class, n, nil)
}

// startReplicaWith is startReplica with options changed by change.
func startReplicaWith(t *testing.T, ns, class string, n int, change func(*operator.Options)) *replica {
	t.Helper()
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.ControllerClass = class
	opts.LeaderElection = true
	opts.LeaderElectionNamespace = ns
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = leaseDuration, renewDeadline, retryPeriod
	// The suite's operator already registered controllers of these names.
	opts.SkipNameValidation = true
	if change != nil {
		change(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(ctx, restCfg, opts)
	if err != nil {
		cancel()
		t.Fatalf("building replica %d of class %s: %v", n, class, err)
	}
	r := &replica{name: fmt.Sprintf("%s/%d", class, n), elected: op.Manager.Elected(), stop: cancel, stopped: make(chan struct{})}
	go func() {
		defer close(r.stopped)
		r.err = op.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		awaitStop(t, "replica "+r.name, r.stopped)
	})
	return r
}

func classStore(t *testing.T, ns, name, class, value string) {
	t.Helper()
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{
			Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: "k", Value: value}}}}}}
	must(t, k8s.Create(context.Background(), s))
}

// leaseHolder is the holder of the lease (empty when there is no lease or
// it was released).
func leaseHolder(t *testing.T, ns, name string) string {
	t.Helper()
	var l coordinationv1.Lease
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &l); err != nil {
		return ""
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// oneLeader waits until exactly one replica holds the lease of the class
// and returns it with the lease's holder identity.
func oneLeader(t *testing.T, ns, class string, rs []*replica) (*replica, string) {
	t.Helper()
	var leader *replica
	var holder string
	eventually(t, wait, func() (bool, string) {
		leader, holder = nil, leaseHolder(t, ns, operator.LeaderElectionID(class))
		n := 0
		for _, r := range rs {
			if r.isElected() {
				leader = r
				n++
			}
		}
		return n == 1 && holder != "", fmt.Sprintf("class %s: %d replicas elected, lease holder %q", class, n, holder)
	})
	return leader, holder
}

// TestLeaderElectionPerClass: two classes of two replicas each. Each class
// has a lease of its own and one leader that syncs its ExternalSecrets;
// when a leader stops cleanly, it releases the lease and the other replica
// of its class takes over at once and syncs, while the other class goes on
// undisturbed.
func TestLeaderElectionPerClass(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	classes := []string{"leader-a", "leader-b"}
	replicas := map[string][]*replica{}
	for _, class := range classes {
		classStore(t, ns, "store-"+class, class, "value-"+class)
		newES(t, ns, "es-"+class, "store-"+class, withData("v", "k", ""))
		for n := range 2 {
			replicas[class] = append(replicas[class], startReplica(t, ns, class, n))
		}
	}

	leaders, holders := map[string]*replica{}, map[string]string{}
	for _, class := range classes {
		leaders[class], holders[class] = oneLeader(t, ns, class, replicas[class])
		waitSecretData(t, ns, "es-"+class, map[string]string{"v": "value-" + class})
	}
	if holders[classes[0]] == holders[classes[1]] {
		t.Fatalf("both classes are led by %q", holders[classes[0]])
	}
	consistently(t, 2*time.Second, func() (bool, string) {
		for _, class := range classes {
			n := 0
			for _, r := range replicas[class] {
				if r.isElected() {
					n++
				}
			}
			if n != 1 {
				return false, fmt.Sprintf("class %s has %d leaders", class, n)
			}
			if h := leaseHolder(t, ns, operator.LeaderElectionID(class)); h != holders[class] {
				return false, fmt.Sprintf("the lease of class %s moved from %q to %q", class, holders[class], h)
			}
		}
		return true, ""
	})

	// The leader of the first class stops cleanly.
	class := classes[0]
	old := leaders[class]
	old.stop()
	select {
	case <-old.stopped:
		if old.err != nil {
			t.Fatalf("replica %s stopped with %v", old.name, old.err)
		}
	case <-time.After(wait):
		t.Fatalf("replica %s did not stop within %s", old.name, wait)
	}
	// It released the lease, so the other replica takes it well before the
	// lease would have expired.
	var successor *replica
	for _, r := range replicas[class] {
		if r != old {
			successor = r
		}
	}
	eventually(t, leaseDuration/2, func() (bool, string) {
		h := leaseHolder(t, ns, operator.LeaderElectionID(class))
		return h != "" && h != holders[class] && successor.isElected(),
			fmt.Sprintf("lease of class %s held by %q (the stopped leader was %q), successor elected: %v", class, h, holders[class], successor.isElected())
	})

	// The successor syncs new work of its class; the other class keeps its
	// leader and syncs too.
	newES(t, ns, "es-"+class+"-after", "store-"+class, withData("v", "k", ""))
	waitSecretData(t, ns, "es-"+class+"-after", map[string]string{"v": "value-" + class})
	other := classes[1]
	newES(t, ns, "es-"+other+"-after", "store-"+other, withData("v", "k", ""))
	waitSecretData(t, ns, "es-"+other+"-after", map[string]string{"v": "value-" + other})
	if h := leaseHolder(t, ns, operator.LeaderElectionID(other)); h != holders[other] {
		t.Errorf("the lease of class %s moved from %q to %q when a leader of class %s stopped", other, holders[other], h, class)
	}
}
