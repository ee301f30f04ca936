package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// The agent as deploy/agent/pod.yaml runs it: an init container that
// writes the files once (--once) and a native sidecar that keeps them
// fresh, both from the operator's image, reading an ExternalSecret with
// creationPolicy None (no Secret is written) through the pod's own
// service-account token. The store here is a fake one, whose data lives in
// its spec, instead of the example's Vault. The workload's container reads
// the files from the shared in-memory volume, and sees a rotation.
func TestAgentSidecarDeliversFilesToTheWorkload(t *testing.T) {
	s := need(t)
	ctx := t.Context()
	ns := newNamespace(t, s, "agent")
	store := fakeStore(t, s, ns, "store", "payments/db", "first-password")
	es := &v1alpha1.ExternalSecret{
		ObjectMeta: metav1.ObjectMeta{Name: "payments-db", Namespace: ns},
		Spec: v1alpha1.ExternalSecretSpec{
			SecretStoreRef:  v1alpha1.StoreRef{Name: "store"},
			RefreshInterval: &metav1.Duration{Duration: time.Hour},
			Target:          v1alpha1.ExternalSecretTarget{CreationPolicy: v1alpha1.CreationPolicyNone},
			Data:            []v1alpha1.ExternalSecretData{{SecretKey: "db-password", RemoteRef: v1alpha1.RemoteReference{Key: "payments/db"}}},
		},
	}
	must(t, s.k8s.Create(ctx, es))
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "watchword-agent", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"externalsecrets"}, ResourceNames: []string{"payments-db"}, Verbs: []string{"get"}},
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"secretstores"}, ResourceNames: []string{"store"}, Verbs: []string{"get"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "watchword-agent", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "watchword-agent"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "payments", Namespace: ns}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watchword-agent", Namespace: ns}, Data: map[string]string{
			"agent.yaml": `kind: AgentConfig
refreshInterval: 2s
kubernetes:
  externalSecrets:
  - name: payments-db
    directory: /secrets/db
    mode: "0440"
    group: "2000"
`}},
	}
	for _, o := range objs {
		must(t, s.k8s.Create(ctx, o))
	}
	mounts := []corev1.VolumeMount{{Name: "secrets", MountPath: "/secrets"}, {Name: "agent-config", MountPath: "/etc/watchword", ReadOnly: true}}
	security := &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: ns},
		Spec: corev1.PodSpec{
			ServiceAccountName:            "payments",
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				RunAsGroup: ptr.To[int64](2000), FSGroup: ptr.To[int64](2000)},
			InitContainers: []corev1.Container{
				{Name: "secrets-init", Image: operatorImage, ImagePullPolicy: corev1.PullNever,
					Args: []string{"agent", "--config", "/etc/watchword/agent.yaml", "--once"}, VolumeMounts: mounts, SecurityContext: security},
				{Name: "secrets", Image: operatorImage, ImagePullPolicy: corev1.PullNever, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					Args: []string{"agent", "--config", "/etc/watchword/agent.yaml"}, VolumeMounts: mounts, SecurityContext: security},
			},
			Containers: []corev1.Container{{
				Name: "payments", Image: appImage, ImagePullPolicy: corev1.PullNever,
				Env:          []corev1.EnvVar{{Name: "APP_FILE", Value: "/secrets/db/db-password"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "secrets", MountPath: "/secrets", ReadOnly: true}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intOrString(8080)}}, PeriodSeconds: 1},
				SecurityContext: security,
			}},
			Volumes: []corev1.Volume{
				{Name: "secrets", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "agent-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "watchword-agent"}}}},
			},
		},
	}
	must(t, s.k8s.Create(ctx, pod))
	var running corev1.Pod
	eventually(t, 2*time.Minute, func() (bool, string) {
		if err := s.k8s.Get(ctx, client.ObjectKeyFromObject(pod), &running); err != nil {
			return false, err.Error()
		}
		for _, c := range running.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("the pod is not Ready:\n%s", s.describePods(ctx, ns))
	})
	if got := fromInside(t, running); got.File != "first-password" {
		t.Fatalf("the workload reads %q (%s), want the value of the store", got.File, got.Error)
	}
	// No Secret: creationPolicy None.
	if _, err := s.kube.CoreV1().Secrets(ns).Get(ctx, "payments-db", metav1.GetOptions{}); err == nil {
		t.Error("a Secret payments-db was written; the ExternalSecret's creationPolicy is None")
	}

	// A rotation reaches the file through the sidecar.
	rotated := &v1alpha1.SecretStore{}
	must(t, s.k8s.Get(ctx, client.ObjectKeyFromObject(store), rotated))
	rotated.Spec.Fake.Data = append(rotated.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: "payments/db", Value: "second-password"})
	must(t, s.k8s.Update(ctx, rotated))
	eventually(t, time.Minute, func() (bool, string) {
		got := fromInside(t, running)
		return got.File == "second-password", "the workload does not read the rotated value yet"
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
