package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// restartedAt is the pod-template annotation of a restart.
const restartedAt = "kubectl.kubernetes.io/restartedAt"

// consumer is a Deployment of the test workload that reads the Secret's
// key as an environment variable and as a file of a secret volume, and
// opts in to restarts on the Secret's rotations.
func consumer(ns, name, secret, key string) *appsv1.Deployment {
	podLabels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{"watchword.io/restart": "true"},
			Annotations: map[string]string{"watchword.io/restart-on": secret, "watchword.io/restart-debounce": "1s"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "app", Image: appImage, ImagePullPolicy: corev1.PullNever,
						Env: []corev1.EnvVar{
							{Name: "APP_ENV", Value: "SECRET_VALUE"},
							{Name: "APP_FILE", Value: "/secrets/" + key},
							{Name: "SECRET_VALUE", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "secret", MountPath: "/secrets", ReadOnly: true}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intOrString(8080)}}, PeriodSeconds: 1},
					}},
					Volumes: []corev1.Volume{{Name: "secret", VolumeSource: corev1.VolumeSource{
						Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
				},
			},
		},
	}
}

// seen is what the workload reports from inside its pod.
type seen struct {
	Env   string `json:"env"`
	File  string `json:"file"`
	Error string `json:"error"`
}

// readyPod waits for the Deployment's rollout to finish with one Ready pod
// and returns it.
func readyPod(t *testing.T, s *env, ns, name string, timeout time.Duration) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, timeout, func() (bool, string) {
		d, err := s.kube.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != 1 || d.Status.ReadyReplicas != 1 || d.Status.Replicas != 1 {
			return false, fmt.Sprintf("Deployment %s rolling out: %+v\n%s", name, d.Status, s.describePods(t.Context(), ns))
		}
		pods, err := s.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: labels.Set{"app": name}.String()})
		if err != nil {
			return false, err.Error()
		}
		var running []corev1.Pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
				running = append(running, p)
			}
		}
		if len(running) != 1 {
			return false, fmt.Sprintf("%d pods of %s not being deleted", len(running), name)
		}
		pod = running[0]
		return true, ""
	})
	return pod
}

// fromInside asks the workload's pod what it sees.
func fromInside(t *testing.T, pod corev1.Pod) seen {
	t.Helper()
	var got seen
	eventually(t, 30*time.Second, func() (bool, string) {
		body, err := get(t.Context(), fmt.Sprintf("http://%s:8080/", pod.Status.PodIP))
		if err != nil {
			return false, err.Error()
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return got
}

// A rotation restarts a real Deployment that reads the Secret as an
// environment variable and as a volume, and its new pod sees the new
// value; the first sync, a drift repair and a restart of Watchword's own
// pods restart nothing.
func TestRotationRestartsARealDeployment(t *testing.T) {
	s := need(t)
	ctx := t.Context()
	ns := newNamespace(t, s, "rotation")
	store := fakeStore(t, s, ns, "store", "app/password", "first-value")
	// The workload exists before the first sync: its pod waits for the
	// Secret, and the first sync must not count as a rotation.
	if _, err := s.kube.AppsV1().Deployments(ns).Create(ctx, consumer(ns, "app", "creds", "password"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	externalSecret(t, s, ns, "creds", "store", "app/password", "password")
	waitTarget(t, s, ns, "creds", "password", "first-value", time.Minute)
	pod := readyPod(t, s, ns, "app", 2*time.Minute)
	if got := fromInside(t, pod); got.Env != "first-value" || got.File != "first-value" {
		t.Fatalf("the pod sees env %q, file %q (%s), want the first value in both", got.Env, got.File, got.Error)
	}

	// A drift repair: someone overwrites the target; Watchword puts the
	// value back and restarts nothing.
	sec, err := s.kube.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["password"] = []byte("tampered")
	if _, err = s.kube.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitTarget(t, s, ns, "creds", "password", "first-value", time.Minute)
	notRestarted(t, s, ns, "app", 5*time.Second, "after the first sync and a drift repair")

	// The rotation: a new version in the store.
	rotated := store.DeepCopy()
	if err = s.k8s.Get(ctx, client.ObjectKeyFromObject(store), rotated); err != nil {
		t.Fatal(err)
	}
	rotated.Spec.Fake.Data = append(rotated.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: "app/password", Value: "second-value"})
	if err = s.k8s.Update(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	waitTarget(t, s, ns, "creds", "password", "second-value", time.Minute)
	eventually(t, time.Minute, func() (bool, string) {
		d, getErr := s.kube.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
		if getErr != nil {
			return false, getErr.Error()
		}
		return d.Spec.Template.Annotations[restartedAt] != "", "the Deployment has not been restarted"
	})
	newPod := readyPod(t, s, ns, "app", 2*time.Minute)
	if newPod.UID == pod.UID {
		t.Fatal("the restart did not replace the pod")
	}
	if got := fromInside(t, newPod); got.Env != "second-value" || got.File != "second-value" {
		t.Fatalf("the new pod sees env %q, file %q (%s), want the rotated value in both", got.Env, got.File, got.Error)
	}

	// Watchword's own pods replaced: no restart of the workload.
	d, err := s.kube.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stamp := d.Spec.Template.Annotations[restartedAt]
	restartOperator(t, s)
	consistently(t, 10*time.Second, func() (bool, string) {
		d, err := s.kube.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Spec.Template.Annotations[restartedAt] == stamp, "Watchword's restart restarted the workload"
	})
}

// notRestarted checks for d that the Deployment's template carries no
// restart.
func notRestarted(t *testing.T, s *env, ns, name string, d time.Duration, when string) {
	t.Helper()
	consistently(t, d, func() (bool, string) {
		dep, err := s.kube.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return dep.Spec.Template.Annotations[restartedAt] == "", "the Deployment was restarted " + when
	})
}

// restartOperator deletes the operator's pods and waits until their
// replacements are Ready.
func restartOperator(t *testing.T, s *env) {
	t.Helper()
	ctx := t.Context()
	sel := "app.kubernetes.io/name=watchword"
	if err := s.kube.CoreV1().Pods(releaseNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil {
		t.Fatal(err)
	}
	waitOperatorReady(t, s, 2)
}

// waitOperatorReady waits until want operator pods, none being deleted,
// are Ready.
func waitOperatorReady(t *testing.T, s *env, want int) {
	t.Helper()
	eventually(t, 2*time.Minute, func() (bool, string) {
		// Not t.Context(): this runs in a cleanup too.
		pods, err := s.kube.CoreV1().Pods(releaseNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=watchword"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if p.DeletionTimestamp == nil && c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == want && len(pods.Items) == want, fmt.Sprintf("%d of %d operator pods Ready:\n%s", ready, want, s.describePods(context.Background(), releaseNS))
	})
}

// consistently fails the test if cond turns false within d.
func consistently(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, msg := cond(); !ok {
			t.Fatal(msg)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func intOrString(port int) intstr.IntOrString { return intstr.FromInt32(int32(port)) }
