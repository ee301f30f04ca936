package integration

import (
	"context"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestMergeWaitsForTargetThenMergesOnlyItsKeys(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "remote"}, fakeEntry{key: "other", value: "o"})
	newES(t, ns, "merger", "store", withTarget("app-config", v1alpha1.CreationPolicyMerge), withData("from-store", "k", ""))
	es := waitCondition(t, ns, "merger", "TargetMissing", `waiting for Secret "app-config"`)
	if es.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("phase = %s, want Pending", es.Status.Phase)
	}
	createSecret(t, ns, "app-config", map[string]string{"local": "kept"})
	waitReady(t, ns, "merger")
	s := waitSecretData(t, ns, "app-config", map[string]string{"local": "kept", "from-store": "remote"})
	if len(s.OwnerReferences) != 0 {
		t.Fatal("Merge must not take ownership")
	}

	// A second Merge writer of other keys is fine; of the same key is not.
	newES(t, ns, "merger2", "store", withTarget("app-config", v1alpha1.CreationPolicyMerge), withData("second", "other", ""))
	waitReady(t, ns, "merger2")
	waitSecretData(t, ns, "app-config", map[string]string{"local": "kept", "from-store": "remote", "second": "o"})
	newES(t, ns, "clash", "store", withTarget("app-config", v1alpha1.CreationPolicyMerge), withData("from-store", "other", ""))
	waitCondition(t, ns, "clash", "TargetConflict", "from-store", `ExternalSecret "merger"`)

	// Deleting a Merge ExternalSecret removes only the keys it merged...
	must(t, k8s.Delete(context.Background(), getES(t, ns, "clash")))
	must(t, k8s.Delete(context.Background(), getES(t, ns, "merger")))
	waitSecretData(t, ns, "app-config", map[string]string{"local": "kept", "second": "o"})
	must(t, k8s.Delete(context.Background(), getES(t, ns, "merger2")))
	waitSecretData(t, ns, "app-config", map[string]string{"local": "kept"})
}

func TestMergeConflictResolvesWhenFirstWriterGoes(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "a", value: "first"}, fakeEntry{key: "b", value: "second"})
	createSecret(t, ns, "cfg", map[string]string{"local": "kept"})
	newES(t, ns, "one", "store", withTarget("cfg", v1alpha1.CreationPolicyMerge), withData("x", "a", ""))
	waitReady(t, ns, "one")
	newES(t, ns, "two", "store", withTarget("cfg", v1alpha1.CreationPolicyMerge), withData("x", "b", ""))
	waitCondition(t, ns, "two", "TargetConflict", `ExternalSecret "one"`)
	must(t, k8s.Delete(context.Background(), getES(t, ns, "one")))
	waitReady(t, ns, "two")
	waitSecretData(t, ns, "cfg", map[string]string{"local": "kept", "x": "second"})
}

func TestOwnerRefusesMergeTarget(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "remote"})
	createSecret(t, ns, "shared", map[string]string{"local": "kept"})
	newES(t, ns, "merger", "store", withTarget("shared", v1alpha1.CreationPolicyMerge), withData("m", "k", ""))
	waitReady(t, ns, "merger")
	newES(t, ns, "owner", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("o", "k", ""), func(es *v1alpha1.ExternalSecret) {
		es.Spec.Target.Adopt = true
	})
	waitCondition(t, ns, "owner", "TargetConflict", "merger")
	waitSecretData(t, ns, "shared", map[string]string{"local": "kept", "m": "remote"})
}
