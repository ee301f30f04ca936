package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/restart"
)

var rolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

// installRolloutCRD installs a minimal Rollout CRD (any spec and status,
// with the status subresource), as Argo Rollouts' own would, without its
// controller: the test plays the controller's part for the status.
func installRolloutCRD(t *testing.T) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "rollouts.argoproj.io"},
		"spec": map[string]any{
			"group": "argoproj.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "Rollout", "listKind": "RolloutList", "plural": "rollouts", "singular": "rollout"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if err := k8s.Create(context.Background(), crd); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	eventually(t, wait, func() (bool, string) {
		u := newRollout()
		return k8s.List(context.Background(), &unstructured.UnstructuredList{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "RolloutList"}}) == nil && u != nil, "the Rollout CRD is not served"
	})
}

func newRollout() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rolloutGVK)
	return u
}

// createRollout creates a Rollout whose pod template reads the Secret
// through envFrom, and reports it Healthy.
func createRollout(t *testing.T, ns, name string, labels, annotations map[string]string, secret string) {
	t.Helper()
	u := newRollout()
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	u.Object["spec"] = map[string]any{
		"replicas": int64(1),
		"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": name}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1",
				"envFrom": []any{map[string]any{"secretRef": map[string]any{"name": secret}}}}}}},
		"strategy": map[string]any{"canary": map[string]any{"steps": []any{map[string]any{"setWeight": int64(20)}}}},
	}
	must(t, k8s.Create(context.Background(), u))
	settleRollout(t, ns, name)
}

func getRollout(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := newRollout()
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u))
	return u
}

// settleRollout plays Argo Rollouts' part: the Rollout's generation is
// seen, its restart (spec.restartAt) done, and it is Healthy.
func settleRollout(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		u := getRollout(t, ns, name)
		status := map[string]any{"phase": "Healthy", "observedGeneration": strconv.FormatInt(u.GetGeneration(), 10),
			"replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)}
		if at, ok, _ := unstructured.NestedString(u.Object, "spec", "restartAt"); ok {
			status["restartedAt"] = at
		}
		u.Object["status"] = status
		if err := k8s.Status().Update(context.Background(), u); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

func restartAt(t *testing.T, ns, name string) string {
	t.Helper()
	at, _, _ := unstructured.NestedString(getRollout(t, ns, name).Object, "spec", "restartAt")
	return at
}

// TestRestartArgoRollouts: a Rollout listed by an ExternalSecret before
// the cluster serves Rollouts is reported as unsupported; once the CRD is
// installed, a Rollout that opts in and one the ExternalSecret lists are
// taken as the baseline, then restarted for a rotation as Argo Rollouts
// restarts them (spec.restartAt, the pod template untouched), and the
// next restart waits until the Rollout's status reports the previous one
// done.
//
// Serial: installs the Rollout CRD, for good, which every operator then
// watches, and asserts that the cluster did not serve Rollouts before.
func TestRestartArgoRollouts(t *testing.T) {
	ns := newNamespace(t, nil)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "creds", "remote", withRefresh(time.Second), withData("k", "upstream", "k"),
		withRestartWorkloads(v1alpha1.WorkloadReference{Kind: v1alpha1.WorkloadRollout, Name: "listed"}))
	waitSecretData(t, ns, "creds", map[string]string{"k": "1"})
	waitEvent(t, ns, "creds", restart.ReasonWorkloadUnsupported, `spec.target.restartWorkloads lists Rollout "listed", but the cluster does not serve Rollout`)

	installRolloutCRD(t)
	ann := map[string]string{restart.DebounceAnnotation: "1s"}
	createRollout(t, ns, "listed", nil, ann, "creds")
	createRollout(t, ns, "opted", map[string]string{restart.Label: restart.LabelValue},
		map[string]string{restart.DebounceAnnotation: "1s", restart.OnAnnotation: restart.Auto}, "creds")
	for _, name := range []string{"listed", "opted"} {
		eventually(t, 2*wait+15*time.Second, func() (bool, string) {
			got := getRollout(t, ns, name).GetAnnotations()[restart.ForAnnotation]
			return got == "creds=", fmt.Sprintf("%s records %q, want the baseline %q", name, got, "creds=")
		})
	}

	rotate(t, src, "k", "2")
	first := waitRolloutRestarts(t, ns, map[string]string{"listed": "", "opted": ""})
	for name := range first {
		waitEvent(t, ns, name, restart.ReasonRestarted, `Secret "creds"`)
		u := getRollout(t, ns, name)
		if tmpl, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "annotations"); len(tmpl) != 0 {
			t.Errorf("%s: the pod template was changed: %v", name, tmpl)
		}
	}
	waitEvent(t, ns, "creds", restart.ReasonRestarted, "Rollout "+ns+"/listed restarted for Secret \"creds\"")

	// Argo reports a rollout of "opted" in progress: its next restart
	// waits, and so does that of "listed" if "opted" went before it.
	setRolloutPhase(t, ns, "opted", "Progressing")
	rotate(t, src, "k", "3")
	waitSecretData(t, ns, "creds", map[string]string{"k": "3"})
	waitEvent(t, ns, "opted", restart.ReasonHeld, "the previous rollout of Rollout "+ns+"/opted has finished")
	if got := restartAt(t, ns, "opted"); got != first["opted"] {
		t.Fatalf("opted restarted again (restartAt %s, was %s) while its rollout was in progress", got, first["opted"])
	}
	settleRollout(t, ns, "opted")
	waitRolloutRestarts(t, ns, first)
	for _, name := range []string{"listed", "opted"} {
		if n := countEvents(t, ns, name, restart.ReasonRestarted, ""); n != 2 {
			t.Errorf("%s: %d Restarted events, want 2", name, n)
		}
	}
}

// waitRolloutRestarts waits until each Rollout of before has a
// spec.restartAt other than the one given, playing Argo's part for those
// restarted meanwhile (the restart of one waits until the one restarted
// before it is available again), and returns the new values.
func waitRolloutRestarts(t *testing.T, ns string, before map[string]string) map[string]string {
	t.Helper()
	now := map[string]string{}
	eventually(t, 2*wait, func() (bool, string) {
		var missing []string
		for name, prev := range before {
			at := restartAt(t, ns, name)
			if at == prev {
				missing = append(missing, name)
				continue
			}
			if now[name] != at {
				now[name] = at
				settleRollout(t, ns, name)
			}
		}
		return len(missing) == 0, fmt.Sprintf("not restarted: %v", missing)
	})
	return now
}

// setRolloutPhase reports a phase for the Rollout, as Argo would.
func setRolloutPhase(t *testing.T, ns, name, phase string) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		u := getRollout(t, ns, name)
		if err := unstructured.SetNestedField(u.Object, phase, "status", "phase"); err != nil {
			return false, err.Error()
		}
		if err := k8s.Status().Update(context.Background(), u); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}
