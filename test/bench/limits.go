package main

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// limitNamespace holds the ExternalSecrets of the custom-resource limits.
const limitNamespace = "limit-es"

// customLimits measures, before the controller runs, how fast the API
// server takes the two custom-resource writes every synced ExternalSecret
// costs: its create (E) and a status update like the one the controller
// writes (U), from the same parallel client as R. With R for the target
// Secret, 1/(1/E + 1/R + 1/U) is the most ExternalSecrets per second that
// any operator writing a status could sync on this machine. The
// ExternalSecrets are deleted afterwards.
func (b *bench) customLimits(ctx context.Context) (creates, updates float64, err error) {
	n := min(b.c.N, 5000)
	if err = b.ensureNamespace(ctx, limitNamespace); err != nil {
		return 0, 0, err
	}
	made := make([]*v1alpha1.ExternalSecret, n)
	start := time.Now()
	err = b.parallel(ctx, n, func(i int) error {
		es := b.newES(limitNamespace, fmt.Sprintf("limit-%d", i), i%b.c.Keys)
		made[i] = es
		return b.k8s.Create(ctx, es)
	})
	if err != nil {
		return 0, 0, err
	}
	creates = float64(n) / time.Since(start).Seconds()
	start = time.Now()
	err = b.parallel(ctx, n, func(i int) error {
		es := made[i]
		es.Status = syncedStatus(es, i%b.c.Keys)
		return b.k8s.Status().Update(ctx, es)
	})
	if err != nil {
		return 0, 0, err
	}
	updates = float64(n) / time.Since(start).Seconds()
	// One collection delete would remove them one by one on the server.
	err = b.parallel(ctx, n, func(i int) error {
		return client.IgnoreNotFound(b.k8s.Delete(ctx, made[i]))
	})
	if err != nil {
		return 0, 0, err
	}
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ExternalSecretList"))
		if err := b.k8s.List(ctx, &list, client.InNamespace(limitNamespace), client.Limit(1)); err != nil {
			return 0, 0, err
		}
		if len(list.Items) == 0 {
			return creates, updates, nil
		}
	}
	fmt.Fprintln(os.Stderr, "the limit ExternalSecrets were not all deleted within 5 minutes")
	return creates, updates, nil
}

// syncedStatus is a status of the size and shape the controller writes
// after a successful sync.
func syncedStatus(es *v1alpha1.ExternalSecret, key int) v1alpha1.ExternalSecretStatus {
	now := metav1.Now()
	msg := fmt.Sprintf("Secret %q holds the data of ClusterSecretStore %q", es.Name, storeName)
	var conds []v1alpha1.ExternalSecretCondition
	for _, t := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInSync} {
		conds = append(conds, v1alpha1.ExternalSecretCondition{Type: t, Status: metav1.ConditionTrue, Reason: "SecretSynced",
			Message: msg, LastTransitionTime: now, LastSyncTime: &now, ObservedGeneration: es.Generation})
	}
	return v1alpha1.ExternalSecretStatus{
		Phase: v1alpha1.PhaseSyncing, Conditions: conds, RefreshTime: &now, ObservedGeneration: es.Generation,
		Versions: []v1alpha1.RemoteVersion{{Key: fmt.Sprintf("key-%d", key), Version: "1"}},
		Target:   es.Name, TargetResourceVersion: "1", SyncedKeys: []string{"password"},
		InputsVersion: "1|ClusterSecretStore//" + storeName + "/00000000-0000-0000-0000-000000000000/1|",
	}
}
