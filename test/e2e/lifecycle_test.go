package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// targetVersions are the resourceVersions of the named Secrets of ns: an
// unchanged resourceVersion means the API server stored no write.
func targetVersions(t *testing.T, s *env, ns string, names []string) map[string]string {
	t.Helper()
	rv := map[string]string{}
	for _, n := range names {
		sec, err := s.kube.CoreV1().Secrets(ns).Get(t.Context(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv[n] = sec.ResourceVersion
	}
	return rv
}

// `helm upgrade` to a new image replaces both pods and hands the lease to
// a pod of the new image without a single write to the targets; `helm
// uninstall` keeps the targets (the ExternalSecrets stay, since Helm
// keeps the CRDs it installed from crds/), and a new install takes them
// up again, still without a write. The release is installed again at the
// end, as the other tests expect it.
func TestHelmUpgradeAndUninstallKeepTargets(t *testing.T) {
	s := need(t)
	ctx := t.Context()
	waitOperatorReady(t, s, 2)
	ns := newNamespace(t, s, "lifecycle")
	fakeStore(t, s, ns, "store", "k", "v1")
	names := []string{"a", "b", "c"}
	for _, n := range names {
		externalSecret(t, s, ns, n, "store", "k", "key")
	}
	for _, n := range names {
		waitTarget(t, s, ns, n, "key", "v1", time.Minute)
	}
	// Let the status writes of the first sync settle.
	time.Sleep(3 * time.Second)
	before := targetVersions(t, s, ns, names)

	args := append([]string{"upgrade", release, s.chart, "--namespace", releaseNS, "--wait", "--timeout", "3m"}, installValues...)
	args = append(args, "--set", "image.tag=e2e-upgrade")
	if out, err := s.helmRun(ctx, args...); err != nil {
		t.Fatalf("helm upgrade: %v: %s\n%s", err, out, s.describePods(ctx, releaseNS))
	}
	waitOperatorReady(t, s, 2)
	eventually(t, time.Minute, func() (bool, string) {
		holder := leader(t, s)
		p, err := s.kube.CoreV1().Pods(releaseNS).Get(ctx, holder, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.Containers[0].Image == upgradeImage, fmt.Sprintf("the lease holder %s runs %s", holder, p.Spec.Containers[0].Image)
	})
	// A new ExternalSecret syncs: the new leader works.
	externalSecret(t, s, ns, "after-upgrade", "store", "k", "key")
	waitTarget(t, s, ns, "after-upgrade", "key", "v1", time.Minute)
	if after := targetVersions(t, s, ns, names); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the upgrade wrote targets: resourceVersions %v, before %v", after, before)
	}

	// Uninstalled: nothing runs, the targets stay.
	if out, err := s.helmRun(ctx, "uninstall", release, "--namespace", releaseNS, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm uninstall: %v: %s", err, out)
	}
	t.Cleanup(func() {
		// The other tests need the release; install it again if this
		// test ended before it did.
		if _, err := s.kube.AppsV1().Deployments(releaseNS).Get(context.Background(), release, metav1.GetOptions{}); err != nil {
			_ = s.helmInstall(context.Background())
		}
	})
	consistently(t, 5*time.Second, func() (bool, string) {
		for _, n := range append(names, "after-upgrade") {
			if _, err := s.kube.CoreV1().Secrets(ns).Get(ctx, n, metav1.GetOptions{}); err != nil {
				return false, fmt.Sprintf("target %s after helm uninstall: %v", n, err)
			}
		}
		return true, ""
	})
	if after := targetVersions(t, s, ns, names); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the uninstall wrote targets: resourceVersions %v, before %v", after, before)
	}

	// Installed again: the same targets, taken up without a write.
	if err := s.helmInstall(ctx); err != nil {
		t.Fatal(err)
	}
	waitOperatorReady(t, s, 2)
	externalSecret(t, s, ns, "after-reinstall", "store", "k", "key")
	waitTarget(t, s, ns, "after-reinstall", "key", "v1", time.Minute)
	if after := targetVersions(t, s, ns, names); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the new install wrote targets: resourceVersions %v, before %v", after, before)
	}
}
