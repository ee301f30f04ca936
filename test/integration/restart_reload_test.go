package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/controller/restart"
)

func createConfigMap(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	must(t, k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}))
}

func setConfigMap(t *testing.T, ns, name, key, value string) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		var cm corev1.ConfigMap
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			return false, err.Error()
		}
		cm.Data[key] = value
		if err := k8s.Update(context.Background(), &cm); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

func configMapKey(cm, key string) podOpt {
	return func(p *corev1.PodSpec) {
		p.Containers[0].Env = append(p.Containers[0].Env, corev1.EnvVar{Name: strings.ToUpper(key), ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key}}})
	}
}

// waitDigests waits until the Deployment records the digests of n
// watched objects: it has taken them as the baseline.
func waitDigests(t *testing.T, ns, name string, n int) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		got := getDeployment(t, ns, name).Annotations[restart.DigestsAnnotation]
		return got != "" && len(strings.Split(got, ",")) == n, fmt.Sprintf("%s records digests %q, want %d", name, got, n)
	})
}

// TestReloadWithReloadersAnnotations: a Deployment that carries
// Watchword's label and Reloader's own annotations, and uses a ConfigMap
// (one key) and a hand-made Secret (whole) that Watchword does not write,
// is taken as the baseline without a restart; a change of a ConfigMap key
// it does not use restarts nothing; a change of the key it uses, and one
// of the Secret, restart it once each; the record holds digests, never a
// value.
func TestReloadWithReloadersAnnotations(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	createConfigMap(t, ns, "settings", map[string]string{"mode": "blue", "unused": "x"})
	createSecret(t, ns, "hand-made", map[string]string{"token": "first-token"})
	newIdleWorkload(t, ns, "web", map[string]string{"reloader.stakater.com/auto": "true", restart.DebounceAnnotation: "1s"},
		configMapKey("settings", "mode"), envFrom("hand-made"))
	waitDigests(t, ns, "web", 2)
	deps.keepRestarts(t, ns, "web", 0)

	setConfigMap(t, ns, "settings", "unused", "y")
	deps.keepRestarts(t, ns, "web", 0)

	setConfigMap(t, ns, "settings", "mode", "green")
	deps.waitRestarts(t, "web", 1, 2*wait)
	if n := countEvents(t, ns, "web", restart.ReasonRestarted, `change of ConfigMap "settings"`); n != 1 {
		t.Fatalf("%d Restarted events naming the ConfigMap, want 1", n)
	}
	deps.keepRestarts(t, ns, "web", 1)

	updateSecret(t, ns, "hand-made", func(s *corev1.Secret) { s.Data["token"] = []byte("second-token") })
	deps.waitRestarts(t, "web", 2, 2*wait)
	deps.keepRestarts(t, ns, "web", 2)

	for k, v := range getDeployment(t, ns, "web").Annotations {
		for _, secret := range []string{"first-token", "second-token", "green", "blue"} {
			if strings.Contains(v, secret) {
				t.Fatalf("annotation %s holds a value", k)
			}
		}
	}
}

// TestReloadNamedWithWatchwordsAnnotations: reload-configmaps names a
// ConfigMap the template reads as a whole (envFrom); a change restarts
// it once, after the debounce, for a burst of three changes.
func TestReloadNamedWithWatchwordsAnnotations(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	createConfigMap(t, ns, "settings", map[string]string{"mode": "blue"})
	newIdleWorkload(t, ns, "web", map[string]string{restart.ReloadConfigMapsAnnotation: "settings", restart.DebounceAnnotation: "3s"},
		func(p *corev1.PodSpec) {
			p.Containers[0].EnvFrom = append(p.Containers[0].EnvFrom, corev1.EnvFromSource{
				ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}})
		})
	waitDigests(t, ns, "web", 1)
	for _, v := range []string{"green", "red", "black"} {
		setConfigMap(t, ns, "settings", "mode", v)
	}
	deps.waitRestarts(t, "web", 1, 2*wait)
	deps.keepRestarts(t, ns, "web", 1)
}

// TestReloadEnvStrategySurvivesAReapply: with the env strategy a change
// sets the digest variable in every container and no restart annotation;
// a GitOps-style re-apply of the original template, which drops the
// variable, rolls the Deployment out but brings no restart from
// Watchword (no loop); the next change sets it again, once.
func TestReloadEnvStrategySurvivesAReapply(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	createConfigMap(t, ns, "settings", map[string]string{"mode": "blue"})
	newIdleWorkload(t, ns, "web", map[string]string{restart.ReloadAutoAnnotation: "true", restart.StrategyAnnotation: restart.StrategyEnv,
		restart.DebounceAnnotation: "1s"}, configMapKey("settings", "mode"))
	waitDigests(t, ns, "web", 1)
	original := getDeployment(t, ns, "web").Spec.Template.DeepCopy()
	digestOf := func() string {
		for _, e := range getDeployment(t, ns, "web").Spec.Template.Spec.Containers[0].Env {
			if e.Name == restart.DigestEnv {
				return e.Value
			}
		}
		return ""
	}

	setConfigMap(t, ns, "settings", "mode", "green")
	eventually(t, 2*wait, func() (bool, string) { return digestOf() != "", "no digest variable" })
	first := digestOf()
	d := getDeployment(t, ns, "web")
	if d.Spec.Template.Annotations[restart.RestartedAtAnnotation] != "" {
		t.Fatal("the env strategy set the restart annotation")
	}
	if n := len(d.Spec.Template.Spec.Containers[0].Env); n != 2 {
		t.Fatalf("%d env entries, want the ConfigMap's and the digest", n)
	}

	// The re-apply: the template as in Git, without the variable.
	eventually(t, wait, func() (bool, string) {
		d := getDeployment(t, ns, "web")
		d.Spec.Template = *original.DeepCopy()
		if err := k8s.Update(context.Background(), d); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	consistently(t, 5*time.Second, func() (bool, string) {
		return digestOf() == "", "Watchword set the digest again after a re-apply"
	})

	setConfigMap(t, ns, "settings", "mode", "red")
	eventually(t, 2*wait, func() (bool, string) { return digestOf() != "", "no digest variable after the second change" })
	if digestOf() == first {
		t.Fatal("the digest did not change with the value")
	}
}

// TestReloadStampsTheCronJobsNextJob: an opted-in CronJob is stamped on
// its Job template when a ConfigMap it uses changes, and not before.
func TestReloadStampsTheCronJobsNextJob(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	createConfigMap(t, ns, "settings", map[string]string{"mode": "blue"})
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly", Labels: map[string]string{restart.Label: restart.LabelValue},
			Annotations: map[string]string{restart.ReloadAutoAnnotation: "true", restart.DebounceAnnotation: "1s"}},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "job", Image: "app:1"}}}}}}},
	}
	configMapKey("settings", "mode")(&cj.Spec.JobTemplate.Spec.Template.Spec)
	must(t, k8s.Create(context.Background(), cj))
	stamp := func() (string, string) {
		var got batchv1.CronJob
		must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(cj), &got))
		return got.Spec.JobTemplate.Spec.Template.Annotations[restart.RestartedAtAnnotation], got.Annotations[restart.DigestsAnnotation]
	}
	eventually(t, wait, func() (bool, string) {
		_, d := stamp()
		return d != "", "the CronJob is not taken as the baseline"
	})
	if s, _ := stamp(); s != "" {
		t.Fatal("the baseline stamped the CronJob")
	}
	setConfigMap(t, ns, "settings", "mode", "green")
	eventually(t, 2*wait, func() (bool, string) {
		s, _ := stamp()
		return s != "", "the CronJob's Job template is not stamped"
	})
}

// TestReloadHeldByTheWindow: the rules of rotations hold for a change: a
// change due while the workload's maintenance window is closed is held,
// told once in a RestartHeld event naming the ConfigMap, and recorded as
// owed; nothing restarts meanwhile.
func TestReloadHeldByTheWindow(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	createConfigMap(t, ns, "settings", map[string]string{"mode": "blue"})
	newIdleWorkload(t, ns, "web", map[string]string{restart.ReloadConfigMapsAnnotation: "settings", restart.DebounceAnnotation: "1s",
		// 03:00 on the first of January: closed during the test.
		restart.WindowAnnotation: "0 3 1 1 *", restart.WindowDurationAnnotation: "1m"}, configMapKey("settings", "mode"))
	waitDigests(t, ns, "web", 1)
	setConfigMap(t, ns, "settings", "mode", "green")
	waitEvent(t, ns, "web", restart.ReasonHeld, `maintenance window`)
	if n := countEvents(t, ns, "web", restart.ReasonHeld, `change of ConfigMap "settings"`); n != 1 {
		t.Fatalf("%d RestartHeld events naming the ConfigMap, want 1", n)
	}
	consistently(t, 3*time.Second, func() (bool, string) {
		pending := getDeployment(t, ns, "web").Annotations[restart.PendingAnnotation]
		return deps.count("web") == 0 && strings.HasPrefix(pending, "configmap/settings="),
			fmt.Sprintf("restarted %d times, owes %q", deps.count("web"), pending)
	})
}

// TestReloadChangeWhileDownIsNotLost: a change made while Watchword is
// stopped is seen when it starts again, as a digest that differs from the
// one recorded on the workload, and restarts the workload once; a start
// with nothing changed restarts nothing.
func TestReloadChangeWhileDownIsNotLost(t *testing.T) {
	parallel(t)
	const class = "reload-down"
	stop := startRestarter(t, class, restart.Rate{})
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	createConfigMap(t, ns, "settings", map[string]string{"mode": "blue"})
	newIdleWorkload(t, ns, "web", map[string]string{restart.ReloadAutoAnnotation: "true", restart.DebounceAnnotation: "1s",
		restart.ClassAnnotation: class}, configMapKey("settings", "mode"))
	waitDigests(t, ns, "web", 1)
	stop()

	stop = startRestarter(t, class, restart.Rate{})
	deps.keepRestarts(t, ns, "web", 0)
	stop()

	setConfigMap(t, ns, "settings", "mode", "green")
	startRestarter(t, class, restart.Rate{})
	deps.waitRestarts(t, "web", 1, wait)
	deps.keepRestarts(t, ns, "web", 1)
}
