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
	err = b.apiserverMs(writeESCreate, n, func() error {
		return b.parallel(ctx, n, func(i int) error {
			es := b.newES(limitNamespace, fmt.Sprintf("limit-%d", i), i%b.c.Keys)
			made[i] = es
			return b.k8s.Create(ctx, es)
		})
	})
	if err != nil {
		return 0, 0, err
	}
	creates = float64(n) / time.Since(start).Seconds()
	start = time.Now()
	err = b.apiserverMs(writeStatus, n, func() error {
		return b.parallel(ctx, n, func(i int) error {
			es := made[i]
			es.Status = syncedStatus(es, i%b.c.Keys)
			return b.k8s.Status().Update(ctx, es)
		})
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
// after a successful sync: its three conditions (Ready, InSync with the
// sync's time, Fresh) with their messages, the remote version, the synced
// keys, the target and its resourceVersion, and the inputs' version.
func syncedStatus(es *v1alpha1.ExternalSecret, key int) v1alpha1.ExternalSecretStatus {
	now := metav1.Now()
	cond := func(t, reason, msg string, synced *metav1.Time) v1alpha1.ExternalSecretCondition {
		return v1alpha1.ExternalSecretCondition{Type: t, Status: metav1.ConditionTrue, Reason: reason,
			Message: msg, LastTransitionTime: now, LastSyncTime: synced, ObservedGeneration: es.Generation}
	}
	store := fmt.Sprintf("ClusterSecretStore %q", storeName)
	return v1alpha1.ExternalSecretStatus{
		Phase: v1alpha1.PhaseSyncing, RefreshTime: &now, ObservedGeneration: es.Generation,
		Conditions: []v1alpha1.ExternalSecretCondition{
			cond(v1alpha1.ConditionReady, "SecretSynced", fmt.Sprintf("Secret %q holds the data of %s", es.Name, store), nil),
			cond(v1alpha1.ConditionInSync, "SecretSynced", "synced from "+store, &now),
			cond(v1alpha1.ConditionFresh, "Refreshed", "the last sync read the data successfully", nil),
		},
		Versions: []v1alpha1.RemoteVersion{{Key: fmt.Sprintf("key-%d", key), Version: "1"}},
		Target:   es.Name, TargetResourceVersion: "12345", SyncedKeys: []string{"password"},
		InputsVersion: "1|ClusterSecretStore//" + storeName + "/00000000-0000-0000-0000-000000000000/1|",
	}
}
