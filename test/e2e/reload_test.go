package e2e

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// The annotations and variable of reloads, as a user writes them.
const (
	restartLabel = "watchword.io/restart"
	digestEnv    = "WATCHWORD_RELOAD_DIGEST"
)

// reloadPod is the pod template of the test workload reading the key
// "token" of the Secret as an environment variable and the key "mode" of
// the ConfigMap as a file.
func reloadPod(secret, configMap string) corev1.PodSpec {
	return corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []corev1.Container{{
			Name: "app", Image: appImage, ImagePullPolicy: corev1.PullNever,
			Env: []corev1.EnvVar{
				{Name: "APP_ENV", Value: "TOKEN"},
				{Name: "APP_FILE", Value: "/config/mode"},
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "token"}}},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config", ReadOnly: true}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intOrString(8080)}}, PeriodSeconds: 1},
		}},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}},
	}
}

// reloadInputs creates the hand-made Secret and the ConfigMap.
func reloadInputs(t *testing.T, s *env, ns, token, mode string) {
	t.Helper()
	if _, err := s.kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hand-made"},
		StringData: map[string]string{"token": token}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"mode": mode}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setSecret(t *testing.T, s *env, ns, name, key, value string) {
	t.Helper()
	sec, err := s.kube.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data[key] = []byte(value)
	if _, err = s.kube.CoreV1().Secrets(ns).Update(t.Context(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setConfigMap(t *testing.T, s *env, ns, name, key, value string) {
	t.Helper()
	cm, err := s.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[key] = value
	if _, err = s.kube.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// reloadDeployment is a Deployment of the test workload with the labels
// and annotations.
func reloadDeployment(name string, meta, ann map[string]string) *appsv1.Deployment {
	podLabels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: meta, Annotations: ann},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}, Spec: reloadPod("hand-made", "settings")}},
	}
}

// newPodSees waits for a pod other than old to be the Deployment's one
// Ready pod, and for it to see env and file.
func newPodSees(t *testing.T, s *env, ns, name string, old corev1.Pod, env, file string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, 3*time.Minute, func() (bool, string) {
		pod = readyPod(t, s, ns, name, 2*time.Minute)
		return pod.UID != old.UID, "the workload was not restarted"
	})
	if got := fromInside(t, pod); got.Env != env || got.File != file {
		t.Fatalf("the new pod sees env %q, file %q (%s), want %q and %q", got.Env, got.File, got.Error, env, file)
	}
	return pod
}

// A team moving from Reloader keeps Reloader's annotation on a Deployment
// that reads a hand-made Secret and a ConfigMap, and adds Watchword's
// label: taking them as the baseline restarts nothing; a change of either
// restarts it, and the new pod sees the new value.
func TestReloadersAnnotationsRestartARealDeployment(t *testing.T) {
	s := need(t)
	ns := newNamespace(t, s, "reload")
	reloadInputs(t, s, ns, "first-token", "blue")
	d := reloadDeployment("app", map[string]string{restartLabel: "true"},
		map[string]string{"reloader.stakater.com/auto": "true", "watchword.io/restart-debounce": "1s"})
	if _, err := s.kube.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := readyPod(t, s, ns, "app", 2*time.Minute)
	if got := fromInside(t, pod); got.Env != "first-token" || got.File != "blue" {
		t.Fatalf("the pod sees env %q, file %q (%s)", got.Env, got.File, got.Error)
	}
	eventually(t, time.Minute, func() (bool, string) {
		got, err := s.kube.AppsV1().Deployments(ns).Get(t.Context(), "app", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Annotations["watchword.io/reload-digests"] != "", "the Deployment is not taken as the baseline"
	})
	notRestarted(t, s, ns, "app", 5*time.Second, "for the baseline")

	setSecret(t, s, ns, "hand-made", "token", "second-token")
	pod = newPodSees(t, s, ns, "app", pod, "second-token", "blue")

	setConfigMap(t, s, ns, "settings", "mode", "green")
	newPodSees(t, s, ns, "app", pod, "second-token", "green")
}

// The env strategy on a real Deployment: a change of the ConfigMap sets
// the digest variable (no restart annotation) and the new pod sees the
// new value; a GitOps-style re-apply of the template from Git, which
// drops the variable, rolls the Deployment out once and Watchword does
// not put the variable back (no loop); the next change restarts it again.
func TestReloadEnvStrategyUnderAReapply(t *testing.T) {
	s := need(t)
	ns := newNamespace(t, s, "reload-env")
	reloadInputs(t, s, ns, "first-token", "blue")
	d := reloadDeployment("app", map[string]string{restartLabel: "true"}, map[string]string{
		"watchword.io/reload-configmaps": "settings", "watchword.io/restart-strategy": "env", "watchword.io/restart-debounce": "1s"})
	if _, err := s.kube.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inGit := d.Spec.Template.DeepCopy()
	pod := readyPod(t, s, ns, "app", 2*time.Minute)
	eventually(t, time.Minute, func() (bool, string) {
		got, err := s.kube.AppsV1().Deployments(ns).Get(t.Context(), "app", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Annotations["watchword.io/reload-digests"] != "", "the Deployment is not taken as the baseline"
	})

	setConfigMap(t, s, ns, "settings", "mode", "green")
	pod = newPodSees(t, s, ns, "app", pod, "first-token", "green")
	got, err := s.kube.AppsV1().Deployments(ns).Get(t.Context(), "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if digest(got) == "" || got.Spec.Template.Annotations[restartedAt] != "" {
		t.Fatalf("the env strategy set %s=%q and %s=%q", digestEnv, digest(got), restartedAt, got.Spec.Template.Annotations[restartedAt])
	}

	// The re-apply from Git.
	eventually(t, 30*time.Second, func() (bool, string) {
		cur, gerr := s.kube.AppsV1().Deployments(ns).Get(t.Context(), "app", metav1.GetOptions{})
		if gerr != nil {
			return false, gerr.Error()
		}
		cur.Spec.Template = *inGit.DeepCopy()
		if _, gerr = s.kube.AppsV1().Deployments(ns).Update(t.Context(), cur, metav1.UpdateOptions{}); gerr != nil {
			return false, gerr.Error()
		}
		return true, ""
	})
	pod = newPodSees(t, s, ns, "app", pod, "first-token", "green")
	settled, err := s.kube.AppsV1().Deployments(ns).Get(t.Context(), "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	consistently(t, 10*time.Second, func() (bool, string) {
		now, err := s.kube.AppsV1().Deployments(ns).Get(t.Context(), "app", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return digest(now) == "" && now.Generation == settled.Generation,
			fmt.Sprintf("after the re-apply the template changed again (generation %d, was %d; digest %q)", now.Generation, settled.Generation, digest(now))
	})

	setConfigMap(t, s, ns, "settings", "mode", "red")
	newPodSees(t, s, ns, "app", pod, "first-token", "red")
}

// digest is the digest variable of the Deployment's container.
func digest(d *appsv1.Deployment) string {
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == digestEnv {
			return e.Value
		}
	}
	return ""
}

// An opted-in CronJob that runs every minute: a change of its ConfigMap
// stamps its Job template; the Job running then is left alone (its pod
// goes on, and sees the old value); the next Job carries the stamp and
// its pod sees the new value.
func TestReloadCronJobsNextJobSeesTheNewValue(t *testing.T) {
	s := need(t)
	ns := newNamespace(t, s, "reload-cron")
	reloadInputs(t, s, ns, "first-token", "blue")
	spec := reloadPod("hand-made", "settings")
	spec.RestartPolicy = corev1.RestartPolicyNever
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "every-minute", Labels: map[string]string{restartLabel: "true"},
			Annotations: map[string]string{"watchword.io/reload-configmaps": "settings", "watchword.io/restart-debounce": "1s"}},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{ActiveDeadlineSeconds: ptr.To[int64](240), BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{Spec: spec}}}},
	}
	if _, err := s.kube.BatchV1().CronJobs(ns).Create(t.Context(), cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() (bool, string) {
		got, err := s.kube.BatchV1().CronJobs(ns).Get(t.Context(), cj.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Annotations["watchword.io/reload-digests"] != "", "the CronJob is not taken as the baseline"
	})
	first := jobPod(t, s, ns, func(batchv1.Job) bool { return true })
	if got := fromInside(t, first); got.File != "blue" {
		t.Fatalf("the first Job's pod sees %q (%s), want blue", got.File, got.Error)
	}

	setConfigMap(t, s, ns, "settings", "mode", "green")
	var stamp string
	eventually(t, time.Minute, func() (bool, string) {
		got, err := s.kube.BatchV1().CronJobs(ns).Get(t.Context(), cj.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		stamp = got.Spec.JobTemplate.Spec.Template.Annotations[restartedAt]
		return stamp != "", "the CronJob's Job template is not stamped"
	})
	next := jobPod(t, s, ns, func(j batchv1.Job) bool { return j.Spec.Template.Annotations[restartedAt] == stamp })
	if got := fromInside(t, next); got.File != "green" {
		t.Fatalf("the next Job's pod sees %q (%s), want green", got.File, got.Error)
	}
	still, err := s.kube.CoreV1().Pods(ns).Get(t.Context(), first.Name, metav1.GetOptions{})
	if err != nil || still.UID != first.UID || still.DeletionTimestamp != nil {
		t.Fatalf("the Job running at the change was not left alone: %v", err)
	}
}

// jobPod waits for a running pod of a Job that match accepts.
func jobPod(t *testing.T, s *env, ns string, match func(batchv1.Job) bool) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, 3*time.Minute, func() (bool, string) {
		jobs, err := s.kube.BatchV1().Jobs(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, j := range jobs.Items {
			if !match(j) {
				continue
			}
			pods, err := s.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{
				LabelSelector: labels.Set{"batch.kubernetes.io/job-name": j.Name}.String()})
			if err != nil {
				return false, err.Error()
			}
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
					pod = p
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("no running pod of a matching Job among %d Jobs\n%s", len(jobs.Items), s.describePods(t.Context(), ns))
	})
	return pod
}
