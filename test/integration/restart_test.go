package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/restart"
	"github.com/watchword-dev/watchword/internal/operator"
)

// deployments counts the restarts of the Deployments of a namespace, as
// changes of the pod template's restartedAt annotation seen by a watch,
// which sees every write. (A Deployment's generation is no count: it
// moves with its annotations too.) Their pods run on the test node, and
// the Deployment and ReplicaSet controllers roll them out: the status the
// restart gate reads is theirs.
type deployments struct {
	mu       sync.Mutex
	restarts map[string]int
	last     map[string]string
	pods     *podRunner
}

func watchDeployments(t *testing.T, ns string) *deployments {
	t.Helper()
	d := &deployments{restarts: map[string]int{}, last: map[string]string{}, pods: runPods(t, ns)}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			dep, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			d.mu.Lock()
			if at := dep.Spec.Template.Annotations[restart.RestartedAtAnnotation]; at != d.last[dep.Name] {
				d.last[dep.Name] = at
				d.restarts[dep.Name]++
			}
			d.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		cancel()
		<-done
	})
	return d
}

// hold keeps the Deployment's next rollout from finishing: the pods made
// from now on run but are not Ready, as when a new version does not come
// up.
func (d *deployments) hold(name string) { d.pods.stall(name) }

// release reports the Deployment's pods Ready, so its rollout finishes.
func (d *deployments) release(name string) { d.pods.release(name) }

func (d *deployments) count(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.restarts[name]
}

// waitRestarts waits until the Deployment has been restarted n times in
// all.
func (d *deployments) waitRestarts(t *testing.T, name string, n int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		got := d.count(name)
		return got == n, fmt.Sprintf("%s restarted %d times, want %d", name, got, n)
	})
}

// keepRestarts checks for a while that nothing restarts the Deployment
// again: it has been restarted n times and owes nothing.
func (d *deployments) keepRestarts(t *testing.T, ns, name string, n int) {
	t.Helper()
	consistently(t, 3*time.Second, func() (bool, string) {
		got := d.count(name)
		pending := getDeployment(t, ns, name).Annotations[restart.PendingAnnotation]
		return got == n && pending == "", fmt.Sprintf("%s restarted %d times, want %d; owes %q", name, got, n, pending)
	})
}

// waitRolledOut waits until the Deployment controller reports the
// Deployment's latest spec rolled out and available, with replicaSets
// ReplicaSets made for it in all (one, and one more per restart).
func waitRolledOut(t *testing.T, ns, name string, replicaSets int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		d := getDeployment(t, ns, name)
		s, want := d.Status, ptr.Deref(d.Spec.Replicas, 1)
		rs := ownedReplicaSets(t, ns, name)
		done := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
		return done && len(rs) == replicaSets, fmt.Sprintf("%s: generation %d observed %d, replicas %d updated %d available %d of %d; %d ReplicaSets, want %d",
			name, d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, want, len(rs), replicaSets)
	})
}

// ownedReplicaSets are the ReplicaSets the Deployment controller made for
// the Deployment.
func ownedReplicaSets(t *testing.T, ns, name string) []appsv1.ReplicaSet {
	t.Helper()
	var list appsv1.ReplicaSetList
	must(t, k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{"app": name}))
	var out []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if owner := metav1.GetControllerOf(&rs); owner != nil && owner.Kind == "Deployment" && owner.Name == name {
			out = append(out, rs)
		}
	}
	return out
}

// rotationSource is a namespace with an upstream Secret, read by the store
// "remote" of ns: changing the upstream Secret makes a new version, which
// the ExternalSecrets of ns sync as a rotation.
func rotationSource(t *testing.T, ns string, data map[string]string) string {
	t.Helper()
	src := newNamespace(t, nil)
	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, src)})
	createSecret(t, src, "upstream", data)
	kubeStore(t, ns, "remote", src, "reader-token")
	return src
}

// rotate changes one key of the upstream Secret.
func rotate(t *testing.T, src, key, value string) {
	t.Helper()
	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data[key] = []byte(value) })
}

type podOpt func(*corev1.PodSpec)

func envFrom(secret string) podOpt {
	return func(p *corev1.PodSpec) {
		p.Containers[0].EnvFrom = append(p.Containers[0].EnvFrom, corev1.EnvFromSource{
			SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}})
	}
}

func envKey(secret, key string) podOpt {
	return func(p *corev1.PodSpec) {
		p.Containers[0].Env = append(p.Containers[0].Env, corev1.EnvVar{Name: strings.ToUpper(key), ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}})
	}
}

// newWorkload creates an opted-in Deployment with the annotations.
func newWorkload(t *testing.T, ns, name string, annotations map[string]string, opts ...podOpt) {
	t.Helper()
	newDeployment(t, ns, name, map[string]string{restart.Label: restart.LabelValue}, annotations, opts...)
}

// newDeployment creates a Deployment of one replica with the labels and
// annotations.
func newDeployment(t *testing.T, ns, name string, meta, annotations map[string]string, opts ...podOpt) {
	t.Helper()
	createDeployment(t, ns, name, 1, meta, annotations, opts...)
}

// newIdleWorkload creates an opted-in Deployment without replicas: its
// rollout has finished as soon as its controller has seen its spec.
func newIdleWorkload(t *testing.T, ns, name string, annotations map[string]string, opts ...podOpt) {
	t.Helper()
	createDeployment(t, ns, name, 0, map[string]string{restart.Label: restart.LabelValue}, annotations, opts...)
}

func createDeployment(t *testing.T, ns, name string, replicas int32, meta, annotations map[string]string, opts ...podOpt) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations, Labels: meta},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}},
	}
	for _, o := range opts {
		o(&d.Spec.Template.Spec)
	}
	must(t, k8s.Create(context.Background(), d))
}

func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d))
	return &d
}

// waitRecorded waits until the Deployment records the ExternalSecret's
// last rotation of its target (none yet: an empty time) as acted on.
func waitRecorded(t *testing.T, ns, name, esName string) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, esName)
		want := es.Status.Target + "="
		if es.Status.LastRotationTime != nil {
			want += es.Status.LastRotationTime.UTC().Format(time.RFC3339)
		}
		got := getDeployment(t, ns, name).Annotations[restart.ForAnnotation]
		return es.Status.Target != "" && strings.Contains(","+got+",", ","+want+","), fmt.Sprintf("%s records %q, want %q", name, got, want)
	})
}

// countEvents counts the events of a reason about an object whose message
// holds fragment, with the repetitions the recorder folded into one.
func countEvents(t *testing.T, ns, object, reason, fragment string) int {
	t.Helper()
	return countEventsOfType(t, ns, object, "", reason, fragment)
}

// countEventsOfType is countEvents for the events of one type (Normal or
// Warning; "" for both).
func countEventsOfType(t *testing.T, ns, object, eventType, reason, fragment string) int {
	t.Helper()
	var evs corev1.EventList
	must(t, k8s.List(context.Background(), &evs, client.InNamespace(ns)))
	n := 0
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason && strings.Contains(e.Message, fragment) &&
			(eventType == "" || e.Type == eventType) {
			n += int(max(e.Count, 1))
		}
	}
	return n
}

// TestRestartOnceForABurstOfRotations: an opted-in Deployment is taken as
// the baseline without a restart, is not restarted for a drift repair or
// a spec change, and is restarted once for a burst of five rotations that
// come within its debounce window; the Deployment controller rolls it out
// with one new ReplicaSet.
func TestRestartOnceForABurstOfRotations(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"password": "one", "user": "app"})
	newES(t, ns, "creds", "remote", withRefresh(time.Second), withData("password", "upstream", "password"))
	waitSecretData(t, ns, "creds", map[string]string{"password": "one"})
	newWorkload(t, ns, "web", map[string]string{restart.OnAnnotation: "creds", restart.DebounceAnnotation: "8s"}, envFrom("creds"))
	waitRecorded(t, ns, "web", "creds")

	// A drift repair and a spec change are not rotations.
	updateSecret(t, ns, "creds", func(s *corev1.Secret) { s.Data["password"] = []byte("tampered") })
	waitEvent(t, ns, "creds", "DriftRepaired", "password")
	updateES(t, ns, "creds", withData("user", "upstream", "user"))
	waitSecretData(t, ns, "creds", map[string]string{"password": "one", "user": "app"})
	waitEvent(t, ns, "creds", "Updated", "user")
	if n := deps.count("web"); n != 0 {
		t.Fatalf("restarted %d times by a first sync, a drift repair and a spec change", n)
	}
	waitRolledOut(t, ns, "web", 1, 2*wait)

	// Five rotations, each within the window of the one before: one
	// restart.
	for i := range 5 {
		rotate(t, src, "password", fmt.Sprint("v", i))
		waitSecretData(t, ns, "creds", map[string]string{"password": fmt.Sprint("v", i), "user": "app"})
	}
	deps.waitRestarts(t, "web", 1, 2*wait)
	waitEvent(t, ns, "web", restart.ReasonRestarted, `Secret "creds"`)
	waitEvent(t, ns, "creds", restart.ReasonRestarted, "Deployment "+ns+"/web restarted for Secret \"creds\"")
	deps.keepRestarts(t, ns, "web", 1)
	if n := countEvents(t, ns, "web", restart.ReasonRestarted, ""); n != 1 {
		t.Errorf("%d Restarted events, want 1", n)
	}
	// The restart is a real rollout: a second ReplicaSet, whose pod
	// template carries the restart.
	waitRolledOut(t, ns, "web", 2, 2*wait)
	restartedAt := getDeployment(t, ns, "web").Spec.Template.Annotations[restart.RestartedAtAnnotation]
	var newest int
	for _, rs := range ownedReplicaSets(t, ns, "web") {
		if rs.Spec.Template.Annotations[restart.RestartedAtAnnotation] == restartedAt && ptr.Deref(rs.Spec.Replicas, 0) == 1 {
			newest++
		}
	}
	if newest != 1 {
		t.Errorf("%d scaled-up ReplicaSets carry the restart %s, want 1", newest, restartedAt)
	}
}

// TestRestartOnlyForKeysInUse: a Deployment that uses key a of a Secret
// is not restarted when only b rotates, and is when a does.
func TestRestartOnlyForKeysInUse(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"a": "1", "b": "1"})
	newES(t, ns, "ab", "remote", withRefresh(time.Second), withData("a", "upstream", "a"), withData("b", "upstream", "b"))
	waitSecretData(t, ns, "ab", map[string]string{"a": "1", "b": "1"})
	newWorkload(t, ns, "uses-a", map[string]string{restart.OnAnnotation: "ab", restart.DebounceAnnotation: "1s"}, envKey("ab", "a"))
	waitRecorded(t, ns, "uses-a", "ab")

	rotate(t, src, "b", "2")
	waitSecretData(t, ns, "ab", map[string]string{"a": "1", "b": "2"})
	eventually(t, wait, func() (bool, string) {
		keys := getES(t, ns, "ab").Status.LastRotatedKeys
		return len(keys) == 1 && keys[0] == "b", fmt.Sprintf("lastRotatedKeys %v", keys)
	})
	// The rotation of b is recorded as acted on, and nothing is owed.
	waitRecorded(t, ns, "uses-a", "ab")
	deps.keepRestarts(t, ns, "uses-a", 0)

	rotate(t, src, "a", "2")
	deps.waitRestarts(t, "uses-a", 1, 2*wait)
	waitEvent(t, ns, "uses-a", restart.ReasonRestarted, `Secret "ab" (keys: a)`)
	deps.keepRestarts(t, ns, "uses-a", 1)
}

// TestRestartAutoFindsEnvFrom: "auto" finds a Secret through envFrom; an
// annotation that does not parse gets a Warning that says what to write,
// and syncing goes on.
func TestRestartAutoFindsEnvFrom(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "app", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "app", map[string]string{"k": "1"})
	newWorkload(t, ns, "auto", map[string]string{restart.OnAnnotation: restart.Auto, restart.DebounceAnnotation: "1s"}, envFrom("app"))
	newWorkload(t, ns, "typo", map[string]string{restart.OnAnnotation: restart.Auto, restart.DebounceAnnotation: "soon"})
	waitRecorded(t, ns, "auto", "app")
	waitEvent(t, ns, "typo", restart.ReasonInvalidAnnotation, restart.DebounceAnnotation+` "soon" is not a duration: write a Go duration such as "10s"`)

	rotate(t, src, "k", "2")
	waitSecretData(t, ns, "app", map[string]string{"k": "2"})
	deps.waitRestarts(t, "auto", 1, 2*wait)
	deps.keepRestarts(t, ns, "auto", 1)
	if n := countEvents(t, ns, "typo", restart.ReasonInvalidAnnotation, ""); n != 1 {
		t.Errorf("%d InvalidAnnotation events, want 1", n)
	}
}

// TestRestartWaitsForTheRollout: a restart due while the workload's
// previous rollout has not finished is held, said once, and made when the
// rollout has finished. The restarts are an operator's of the test's own
// class: the suite operator's next restart, of any test, would wait for
// the stuck rollout too.
func TestRestartWaitsForTheRollout(t *testing.T) {
	parallel(t)
	const class = "restart-rollout"
	startRestarter(t, class, restart.Rate{}, warnHeldAfter(heldWarningAfter))
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "s", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "s", map[string]string{"k": "1"})
	newWorkload(t, ns, "slow", map[string]string{restart.OnAnnotation: "s", restart.DebounceAnnotation: "1s", restart.ClassAnnotation: class}, envFrom("s"))
	waitRecorded(t, ns, "slow", "s")
	waitRolledOut(t, ns, "slow", 1, 2*wait)

	deps.hold("slow")
	rotate(t, src, "k", "2")
	deps.waitRestarts(t, "slow", 1, wait)
	rotate(t, src, "k", "3")
	waitSecretData(t, ns, "s", map[string]string{"k": "3"})
	rollout := "the previous rollout of Deployment " + ns + "/slow has finished"
	waitEvent(t, ns, "slow", restart.ReasonHeld, rollout)
	if n := deps.count("slow"); n != 1 {
		t.Fatalf("restarted %d times during its rollout, want 1", n)
	}

	// The first restart's new pod never became Ready: the Deployment
	// controller keeps the rollout open, and the restart waits.
	consistently(t, 3*time.Second, func() (bool, string) {
		return deps.count("slow") == 1, fmt.Sprintf("restarted %d times during its rollout, want 1", deps.count("slow"))
	})
	deps.release("slow")
	deps.waitRestarts(t, "slow", 2, wait)
	deps.keepRestarts(t, ns, "slow", 2)
	waitRolledOut(t, ns, "slow", 3, 2*wait)
	if n := countEvents(t, ns, "slow", restart.ReasonHeld, rollout); n != 1 {
		t.Errorf("%d RestartHeld events for the rollout, want 1", n)
	}
}

// startRestarter starts an operator of its own class with a restart rate,
// for workloads that name the class; stop stops it. tune changes its
// other options.
func startRestarter(t *testing.T, class string, rate restart.Rate, tune ...func(*operator.Options)) (stop func()) {
	t.Helper()
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	// The suite's tests run at once and assert each object's own events:
	// no cap on Normal events, which would sum some of them up (the cap
	// has tests of its own, internal/events).
	opts.NormalEventsPerSecond = 0
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.ControllerClass = class
	opts.RestartRate = rate
	opts.SkipNameValidation = true
	for _, f := range tune {
		f(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(ctx, restCfg, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := op.Start(ctx); err != nil {
			t.Errorf("operator of class %s: %v", class, err)
		}
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// TestRestartHeldByRateHappensOnce: with a rate of one restart in ten
// seconds, of two workloads due at once the second is held, told once,
// and restarted later exactly once; a restart of the operator restarts
// nothing again.
func TestRestartHeldByRateHappensOnce(t *testing.T) {
	parallel(t)
	const class = "restart-rate"
	stop := startRestarter(t, class, restart.Rate{Count: 1, Per: 10 * time.Second})
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "shared", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "shared", map[string]string{"k": "1"})
	ann := map[string]string{restart.OnAnnotation: "shared", restart.DebounceAnnotation: "1s", restart.ClassAnnotation: class}
	newWorkload(t, ns, "one", ann, envFrom("shared"))
	newWorkload(t, ns, "two", ann, envFrom("shared"))
	waitRecorded(t, ns, "one", "shared")
	waitRecorded(t, ns, "two", "shared")

	rotate(t, src, "k", "2")
	var first, second string
	eventually(t, wait, func() (bool, string) {
		a, b := deps.count("one"), deps.count("two")
		switch {
		case a == 1 && b == 0:
			first, second = "one", "two"
		case b == 1 && a == 0:
			first, second = "two", "one"
		default:
			return false, fmt.Sprintf("restarts: one %d, two %d; want one of them restarted", a, b)
		}
		return true, ""
	})
	waitEvent(t, ns, second, restart.ReasonHeld, `rotation of Secret "shared"`)
	deps.waitRestarts(t, second, 1, 2*wait)
	deps.keepRestarts(t, ns, first, 1)
	deps.keepRestarts(t, ns, second, 1)
	if n := countEvents(t, ns, second, restart.ReasonHeld, ""); n != 1 {
		t.Errorf("%d RestartHeld events for %s, want 1", n, second)
	}

	// A new instance reads what was done from the workloads: it restarts
	// nothing again, and each workload once for the next rotation.
	stop()
	startRestarter(t, class, restart.Rate{Count: 1, Per: 10 * time.Second})
	deps.keepRestarts(t, ns, "one", 1)
	deps.keepRestarts(t, ns, "two", 1)
	rotate(t, src, "k", "3")
	eventually(t, 2*wait, func() (bool, string) {
		a, b := deps.count("one"), deps.count("two")
		return a == 2 && b == 2, fmt.Sprintf("restarts: one %d, two %d; want 2 each", a, b)
	})
	deps.keepRestarts(t, ns, "one", 2)
	deps.keepRestarts(t, ns, "two", 2)
}

// TestRestartWaitsForTheWindow: a restart due outside the workload's
// maintenance window waits for it, says when it will happen, and is made
// once when the window opens; a window that does not parse is reported,
// restarts nothing, and syncing goes on. The restarts are an operator's
// of the test's own class, whose gate no other test's restart holds up
// once the window opens.
func TestRestartWaitsForTheWindow(t *testing.T) {
	parallel(t)
	const class = "restart-window"
	startRestarter(t, class, restart.Rate{})
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "s", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "s", map[string]string{"k": "1"})
	newWorkload(t, ns, "typo", map[string]string{restart.OnAnnotation: "s", restart.DebounceAnnotation: "1s",
		restart.WindowAnnotation: "Mon-Fri 02:00-04:00", restart.ClassAnnotation: class}, envFrom("s"))
	waitRecorded(t, ns, "typo", "s")
	waitEvent(t, ns, "typo", restart.ReasonInvalidAnnotation, restart.WindowAnnotation+` "Mon-Fri 02:00-04:00" does not parse`)

	// A window that opens once a day, a little after the rotation below
	// (seconds first, in UTC): late enough for the rotation to be held
	// first on a machine busy with other tests.
	opens := time.Now().UTC().Add(30 * time.Second).Truncate(time.Second)
	window := fmt.Sprintf("%d %d %d * * *", opens.Second(), opens.Minute(), opens.Hour())
	newWorkload(t, ns, "nightly", map[string]string{restart.OnAnnotation: "s", restart.DebounceAnnotation: "1s",
		restart.WindowAnnotation: window, restart.WindowDurationAnnotation: "1h", restart.ClassAnnotation: class}, envFrom("s"))
	waitRecorded(t, ns, "nightly", "s")

	rotate(t, src, "k", "2")
	waitSecretData(t, ns, "s", map[string]string{"k": "2"})
	waitEvent(t, ns, "nightly", restart.ReasonHeld, "opens at "+opens.Format(time.RFC3339))
	waitEvent(t, ns, "typo", restart.ReasonHeld, "the restart waits until "+restart.WindowAnnotation+" is fixed")
	deps.waitRestarts(t, "nightly", 1, 2*wait)
	restartedAt, err := time.Parse(time.RFC3339Nano, getDeployment(t, ns, "nightly").Spec.Template.Annotations[restart.RestartedAtAnnotation])
	if err != nil || restartedAt.Before(opens) {
		t.Errorf("restarted at %s (%v), before the window opened at %s", restartedAt, err, opens)
	}
	deps.keepRestarts(t, ns, "nightly", 1)
	if n := countEvents(t, ns, "nightly", restart.ReasonHeld, ""); n != 1 {
		t.Errorf("%d RestartHeld events, want 1", n)
	}

	// The bad window restarts nothing; the Secret still follows the store.
	rotate(t, src, "k", "3")
	waitSecretData(t, ns, "s", map[string]string{"k": "3"})
	if n := deps.count("typo"); n != 0 {
		t.Errorf("restarted %d times with a window that does not parse", n)
	}
	if n := countEvents(t, ns, "typo", restart.ReasonInvalidAnnotation, ""); n != 1 {
		t.Errorf("%d InvalidAnnotation events, want 1", n)
	}
}

func withRestartWorkloads(refs ...v1alpha1.WorkloadReference) esOpt {
	return func(es *v1alpha1.ExternalSecret) { es.Spec.Target.RestartWorkloads = refs }
}

// TestRestartWorkloadsListedByTheExternalSecret: an ExternalSecret lists
// a Deployment without the label; it is taken as the baseline, not
// restarted when a key it does not use rotates, and restarted once when
// one it uses does. A listed Deployment that does not exist gets a
// Warning on the ExternalSecret, which goes on syncing.
func TestRestartWorkloadsListedByTheExternalSecret(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"a": "1", "b": "1"})
	newDeployment(t, ns, "api", nil, map[string]string{restart.DebounceAnnotation: "1s"}, envKey("creds", "a"))
	newES(t, ns, "creds", "remote", withRefresh(time.Second), withData("a", "upstream", "a"), withData("b", "upstream", "b"),
		withRestartWorkloads(v1alpha1.WorkloadReference{Kind: v1alpha1.WorkloadDeployment, Name: "api"},
			v1alpha1.WorkloadReference{Kind: v1alpha1.WorkloadDeployment, Name: "ghost"}))
	waitSecretData(t, ns, "creds", map[string]string{"a": "1", "b": "1"})
	waitRecorded(t, ns, "api", "creds")
	waitEvent(t, ns, "creds", restart.ReasonWorkloadNotFound, `spec.target.restartWorkloads lists Deployment "ghost", which does not exist`)

	rotate(t, src, "b", "2")
	waitSecretData(t, ns, "creds", map[string]string{"a": "1", "b": "2"})
	eventually(t, wait, func() (bool, string) {
		keys := getES(t, ns, "creds").Status.LastRotatedKeys
		return len(keys) == 1 && keys[0] == "b", fmt.Sprintf("lastRotatedKeys %v", keys)
	})
	waitRecorded(t, ns, "api", "creds")
	deps.keepRestarts(t, ns, "api", 0)

	rotate(t, src, "a", "2")
	deps.waitRestarts(t, "api", 1, 2*wait)
	waitEvent(t, ns, "api", restart.ReasonRestarted, `Secret "creds" (keys: a)`)
	waitEvent(t, ns, "creds", restart.ReasonRestarted, "Deployment "+ns+"/api restarted for Secret \"creds\"")
	deps.keepRestarts(t, ns, "api", 1)
	if n := countEvents(t, ns, "creds", restart.ReasonWorkloadNotFound, ""); n != 1 {
		t.Errorf("%d RestartWorkloadNotFound events, want 1", n)
	}
	waitReady(t, ns, "creds")
}

// TestListedWorkloadWarnedOnceWithSeveralClasses: with operators of two
// classes running, a listed workload that does not exist is warned about
// once, by the operator that serves the ExternalSecret's store, whichever
// class that is.
func TestListedWorkloadWarnedOnceWithSeveralClasses(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	class := "listing-" + strings.Split(ns, "-")[0]
	startRestarter(t, class, restart.Rate{})
	ghost := withRestartWorkloads(v1alpha1.WorkloadReference{Kind: v1alpha1.WorkloadDeployment, Name: "ghost"})
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{
			Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: "k", Value: "v"}}}}}}))
	newES(t, ns, "theirs", "theirs", withData("k", "k", ""), ghost)
	// Synced by the other class's operator: it is running.
	waitSecretData(t, ns, "theirs", map[string]string{"k": "v"})
	fakeStore(t, ns, "ours", fakeEntry{key: "k", value: "v"})
	newES(t, ns, "ours", "ours", withData("k", "k", ""), ghost)
	waitSecretData(t, ns, "ours", map[string]string{"k": "v"})
	for _, es := range []string{"theirs", "ours"} {
		waitEvent(t, ns, es, restart.ReasonWorkloadNotFound, `lists Deployment "ghost"`)
	}
	consistently(t, 3*time.Second, func() (bool, string) {
		for _, es := range []string{"theirs", "ours"} {
			if n := countEvents(t, ns, es, restart.ReasonWorkloadNotFound, ""); n != 1 {
				return false, fmt.Sprintf("%d RestartWorkloadNotFound warnings on %s, want 1", n, es)
			}
		}
		return true, ""
	})
}
