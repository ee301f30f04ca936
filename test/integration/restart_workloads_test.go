package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/restart"
)

// TestRestartFiftyDeploymentsKeepToTheRate: 50 opted-in Deployments
// consume one Secret, and an instance restarts at most 10 in any 5 s (the
// issue's 10 a minute on a scaled window). One rotation restarts each
// exactly once, each is rolled out by the Deployment controller, and no
// 5 s window holds more than 10 of the restart times the workloads
// record.
func TestRestartFiftyDeploymentsKeepToTheRate(t *testing.T) {
	parallel(t)
	const class, n = "restart-fifty", 50
	rate := restart.Rate{Count: 10, Per: 5 * time.Second}
	startRestarter(t, class, rate)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "shared", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "shared", map[string]string{"k": "1"})
	ann := map[string]string{restart.OnAnnotation: restart.Auto, restart.DebounceAnnotation: "1s", restart.ClassAnnotation: class}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("app-%02d", i)
		newWorkload(t, ns, names[i], ann, envFrom("shared"))
	}
	for _, name := range names {
		waitRecorded(t, ns, name, "shared")
	}

	rotate(t, src, "k", "2")
	started := time.Now()
	for _, name := range names {
		// Each restart waits for the one before it to be available: 50
		// rollouts one after the other.
		deps.waitRestarts(t, name, 1, 10*time.Minute-time.Since(started))
	}
	allRestarted := time.Since(started)
	var times []time.Time
	consistently(t, 3*time.Second, func() (bool, string) {
		for _, name := range names {
			if got := deps.count(name); got != 1 {
				return false, fmt.Sprintf("%s restarted %d times, want 1", name, got)
			}
		}
		return true, ""
	})
	for _, name := range names {
		waitRolledOut(t, ns, name, 2, 2*wait)
		if owed := getDeployment(t, ns, name).Annotations[restart.PendingAnnotation]; owed != "" {
			t.Errorf("%s still owes %q", name, owed)
		}
		at, err := time.Parse(time.RFC3339Nano, getDeployment(t, ns, name).Spec.Template.Annotations[restart.RestartedAtAnnotation])
		must(t, err)
		times = append(times, at)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	fullest := 0
	for i, from := range times {
		in := 0
		for _, at := range times[i:] {
			if at.Sub(from) < rate.Per {
				in++
			}
		}
		if in > rate.Count {
			t.Errorf("%d restarts in the %s from %s, want at most %d", in, rate.Per, from.Format(time.StampMilli), rate.Count)
		}
		fullest = max(fullest, in)
	}
	t.Logf("%d restarts in %s (first to last restart %s; the rate alone allows them in %s); fullest %s window: %d",
		n, allRestarted.Round(100*time.Millisecond), times[n-1].Sub(times[0]).Round(100*time.Millisecond),
		time.Duration(n-1)*rate.Interval(), rate.Per, fullest)
}

// TestRestartWaitsUntilThePreviousWorkloadIsAvailable: of two workloads
// due at once, the one restarted first does not come up (its new pod is
// never Ready), so the other is held, and once that hold has lasted
// --restart-held-warning-after it gets a Warning that names the first;
// once the first is available again, the other is restarted, once.
//
// Serial: it counts the hold events of the held workload, which depend on
// the Deployment controller reporting the first workload available
// promptly; beside the parallel tests a second hold was reported once (the
// cause, a hold reported again while availability lags, is not found yet).
func TestRestartWaitsUntilThePreviousWorkloadIsAvailable(t *testing.T) {
	const class = "restart-gate"
	startRestarter(t, class, restart.Rate{}, warnHeldAfter(heldWarningAfter))
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "s", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "s", map[string]string{"k": "1"})
	ann := map[string]string{restart.OnAnnotation: "s", restart.DebounceAnnotation: "1s", restart.ClassAnnotation: class}
	for _, name := range []string{"one", "two"} {
		newWorkload(t, ns, name, ann, envFrom("s"))
		waitRecorded(t, ns, name, "s")
		waitRolledOut(t, ns, name, 1, 2*wait)
		deps.hold(name)
	}

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
	held := fmt.Sprintf("the restart waits until Deployment %s/%s, restarted before it, is available again", ns, first)
	waitEventWithin(t, 3*wait, ns, second, restart.ReasonHeld, held)
	if n := countEventsOfType(t, ns, second, corev1.EventTypeWarning, restart.ReasonHeld, held); n != 1 {
		t.Errorf("%d RestartHeld Warnings naming %s, want 1", n, first)
	}
	consistently(t, 3*time.Second, func() (bool, string) {
		return deps.count(second) == 0, fmt.Sprintf("%s restarted while %s's rollout is stuck", second, first)
	})
	// The Deployment controller reports the rollout in its own time.
	eventually(t, wait, func() (bool, string) {
		d := getDeployment(t, ns, first)
		return d.Status.UpdatedReplicas == 1 && d.Status.AvailableReplicas == 1 && d.Status.Replicas == 2,
			fmt.Sprintf("%s's stuck rollout: status %+v, want the old pod available and the new one not", first, d.Status)
	})

	deps.release(first)
	waitRolledOut(t, ns, first, 2, 2*wait)
	deps.waitRestarts(t, second, 1, 2*wait)
	deps.release(second)
	waitRolledOut(t, ns, second, 2, 2*wait)
	deps.keepRestarts(t, ns, first, 1)
	deps.keepRestarts(t, ns, second, 1)
	if n := countEvents(t, ns, second, restart.ReasonHeld, ""); n != 1 {
		t.Errorf("%d RestartHeld events for %s, want 1", n, second)
	}
}

// TestRestartReplacesStatefulSetAndDaemonSetPods: an opted-in StatefulSet
// and DaemonSet are restarted for a rotation, and their controllers
// really replace their pods.
func TestRestartReplacesStatefulSetAndDaemonSetPods(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	runPods(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "s", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "s", map[string]string{"k": "1"})
	meta := metav1.ObjectMeta{Namespace: ns, Labels: map[string]string{restart.Label: restart.LabelValue},
		Annotations: map[string]string{restart.OnAnnotation: restart.Auto, restart.DebounceAnnotation: "1s"}}
	template := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	}
	sts := &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), ServiceName: "db",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template("db")}}
	sts.Name = "db"
	envFrom("s")(&sts.Spec.Template.Spec)
	ds := &appsv1.DaemonSet{ObjectMeta: *meta.DeepCopy(), Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}, Template: template("agent")}}
	ds.Name = "agent"
	envFrom("s")(&ds.Spec.Template.Spec)
	must(t, k8s.Create(context.Background(), sts))
	must(t, k8s.Create(context.Background(), ds))
	before := map[string][]types.UID{}
	for _, w := range []client.Object{sts, ds} {
		waitWorkloadRecorded(t, w, "s")
		waitPodsReplaced(t, w, nil)
		before[w.GetName()] = podUIDs(t, ns, w.GetName())
	}

	rotate(t, src, "k", "2")
	for _, w := range []client.Object{sts, ds} {
		waitPodsReplaced(t, w, before[w.GetName()])
		waitEvent(t, ns, w.GetName(), restart.ReasonRestarted, `Secret "s"`)
		if n := countEvents(t, ns, w.GetName(), restart.ReasonRestarted, ""); n != 1 {
			t.Errorf("%s: %d Restarted events, want 1", w.GetName(), n)
		}
	}
}

// waitWorkloadRecorded waits until the workload records the current
// rotation of the Secret as acted on (the baseline).
func waitWorkloadRecorded(t *testing.T, w client.Object, secret string) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(w), w))
		got := w.GetAnnotations()[restart.ForAnnotation]
		return len(got) > len(secret) && got[:len(secret)+1] == secret+"=", fmt.Sprintf("%s records %q", w.GetName(), got)
	})
}

// waitPodsReplaced waits until the StatefulSet or DaemonSet has finished
// its rollout by its controller's own status, with every pod Ready and
// none of the pods in old left.
func waitPodsReplaced(t *testing.T, w client.Object, old []types.UID) {
	t.Helper()
	eventually(t, 2*wait, func() (bool, string) {
		must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(w), w))
		var done bool
		var status string
		switch w := w.(type) {
		case *appsv1.StatefulSet:
			s, want := w.Status, ptr.Deref(w.Spec.Replicas, 1)
			done = s.ObservedGeneration >= w.Generation && s.CurrentRevision == s.UpdateRevision &&
				s.UpdatedReplicas == want && s.ReadyReplicas == want && s.AvailableReplicas == want
			status = fmt.Sprintf("%+v", s)
		case *appsv1.DaemonSet:
			s := w.Status
			done = s.ObservedGeneration >= w.Generation && s.DesiredNumberScheduled == 1 &&
				s.UpdatedNumberScheduled == 1 && s.NumberAvailable == 1 && s.NumberReady == 1
			status = fmt.Sprintf("%+v", s)
		}
		uids := podUIDs(t, w.GetNamespace(), w.GetName())
		for _, uid := range uids {
			if slices.Contains(old, uid) {
				return false, fmt.Sprintf("%s: pod %s not replaced yet; status %s", w.GetName(), uid, status)
			}
		}
		return done, fmt.Sprintf("%s: rollout not finished: %s", w.GetName(), status)
	})
}

// podUIDs are the pods of the workload whose pods are labelled app.
func podUIDs(t *testing.T, ns, app string) []types.UID {
	t.Helper()
	var pods corev1.PodList
	must(t, k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}))
	var out []types.UID
	for _, p := range pods.Items {
		out = append(out, p.UID)
	}
	return out
}

// TestRestartWorkloadCreatedAfterARotation: a workload created after its
// Secret was synced and rotated takes that rotation as its baseline, and
// is restarted only for the next one.
func TestRestartWorkloadCreatedAfterARotation(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "s", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "s", map[string]string{"k": "1"})
	rotate(t, src, "k", "2")
	waitSecretData(t, ns, "s", map[string]string{"k": "2"})
	eventually(t, wait, func() (bool, string) {
		return getES(t, ns, "s").Status.LastRotationTime != nil, "no rotation recorded"
	})

	newWorkload(t, ns, "late", map[string]string{restart.OnAnnotation: restart.Auto, restart.DebounceAnnotation: "1s"}, envFrom("s"))
	waitRecorded(t, ns, "late", "s")
	waitRolledOut(t, ns, "late", 1, 2*wait)
	deps.keepRestarts(t, ns, "late", 0)

	rotate(t, src, "k", "3")
	deps.waitRestarts(t, "late", 1, 2*wait)
	deps.keepRestarts(t, ns, "late", 1)
	waitRolledOut(t, ns, "late", 2, 2*wait)
}

// TestRestartAutoFindsProjectedItemsAndPullSecrets: "auto" finds a Secret
// through a projected volume's items and through imagePullSecrets,
// without naming it. A projected item of key a does not restart the
// workload when only b rotates; the pull secret, which uses the whole
// Secret, does.
func TestRestartAutoFindsProjectedItemsAndPullSecrets(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"a": "1", "b": "1"})
	newES(t, ns, "ab", "remote", withRefresh(time.Second), withData("a", "upstream", "a"), withData("b", "upstream", "b"))
	waitSecretData(t, ns, "ab", map[string]string{"a": "1", "b": "1"})
	ann := map[string]string{restart.OnAnnotation: restart.Auto, restart.DebounceAnnotation: "1s"}
	newWorkload(t, ns, "projected", ann, func(p *corev1.PodSpec) {
		p.Volumes = append(p.Volumes, corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ab"},
				Items: []corev1.KeyToPath{{Key: "a", Path: "a.txt"}}}}}}}})
	})
	newWorkload(t, ns, "pull", ann, func(p *corev1.PodSpec) {
		p.ImagePullSecrets = append(p.ImagePullSecrets, corev1.LocalObjectReference{Name: "ab"})
	})
	for _, name := range []string{"projected", "pull"} {
		waitRecorded(t, ns, name, "ab")
		waitRolledOut(t, ns, name, 1, 2*wait)
	}

	rotate(t, src, "b", "2")
	deps.waitRestarts(t, "pull", 1, 2*wait)
	waitEvent(t, ns, "pull", restart.ReasonRestarted, `Secret "ab" (keys: b)`)
	waitRecorded(t, ns, "projected", "ab")
	deps.keepRestarts(t, ns, "projected", 0)

	rotate(t, src, "a", "2")
	deps.waitRestarts(t, "projected", 1, 2*wait)
	waitEvent(t, ns, "projected", restart.ReasonRestarted, `Secret "ab" (keys: a)`)
	deps.waitRestarts(t, "pull", 2, 2*wait)
	deps.keepRestarts(t, ns, "projected", 1)
	deps.keepRestarts(t, ns, "pull", 2)
	waitRolledOut(t, ns, "projected", 2, 2*wait)
}

// TestRestartListedWorkloadCreatedLater: a Deployment listed by an
// ExternalSecret before it exists is watched for: once created it takes
// the current rotation as its baseline (well before the 5 minute
// fallback look), and is restarted once for the next rotation.
func TestRestartListedWorkloadCreatedLater(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"a": "1"})
	newES(t, ns, "creds", "remote", withRefresh(time.Second), withData("a", "upstream", "a"),
		withRestartWorkloads(v1alpha1.WorkloadReference{Kind: v1alpha1.WorkloadDeployment, Name: "late"}))
	waitSecretData(t, ns, "creds", map[string]string{"a": "1"})
	waitEvent(t, ns, "creds", restart.ReasonWorkloadNotFound, `Deployment "late"`)
	rotate(t, src, "a", "2")
	eventually(t, wait, func() (bool, string) {
		return getES(t, ns, "creds").Status.LastRotationTime != nil, "no rotation recorded"
	})

	newDeployment(t, ns, "late", nil, map[string]string{restart.DebounceAnnotation: "1s"}, envKey("creds", "a"))
	waitRecorded(t, ns, "late", "creds")
	waitRolledOut(t, ns, "late", 1, 2*wait)
	deps.keepRestarts(t, ns, "late", 0)

	rotate(t, src, "a", "3")
	deps.waitRestarts(t, "late", 1, 2*wait)
	deps.keepRestarts(t, ns, "late", 1)
	waitRolledOut(t, ns, "late", 2, 2*wait)
}
