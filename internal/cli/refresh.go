package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
)

// Refresh asks for a sync now of the named ExternalSecrets of namespace
// ns (every one of ns when names is empty), through the force-sync
// annotation, which bypasses every cache, and waits for each outcome until
// timeout. It writes one line per ExternalSecret and returns an error
// when one failed or did not sync in time.
func Refresh(ctx context.Context, c client.Client, ns string, names []string, timeout time.Duration, now func() time.Time, out io.Writer) error {
	if len(names) == 0 {
		var list v1alpha1.ExternalSecretList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("listing ExternalSecrets: %w", err)
		}
		for _, es := range list.Items {
			names = append(names, es.Name)
		}
		if len(names) == 0 {
			return fmt.Errorf("no ExternalSecret in namespace %q", ns)
		}
	}
	stamp := now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, conditions.ForceSyncAnnotation, stamp)
	for _, name := range names {
		es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := c.Patch(ctx, es, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("asking ExternalSecret %s/%s to sync: %w", ns, name, err)
		}
	}
	deadline := now().Add(timeout)
	failed := 0
	for _, name := range names {
		ok, line, err := waitRefreshed(ctx, c, ns, name, stamp, deadline, now)
		if err != nil {
			return err
		}
		if !ok {
			failed++
		}
		fmt.Fprintln(out, line)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d ExternalSecrets did not sync", failed, len(names))
	}
	return nil
}

// waitRefreshed waits until the ExternalSecret synced the force-sync
// value stamp, or its sync of that value failed, or deadline passes; it
// tells how it went in one line. The controller records the value it
// synced (status.forceSyncedValue) and the value whose sync failed
// (status.forceSyncFailedValue), so only an outcome of this request ends
// the wait: a failure that was there before, or one of an older request,
// does not.
func waitRefreshed(ctx context.Context, c client.Reader, ns, name, stamp string, deadline time.Time, now func() time.Time) (bool, string, error) {
	for {
		var es v1alpha1.ExternalSecret
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &es); err != nil {
			return false, "", err
		}
		if es.Status.ForceSyncedValue == stamp {
			return true, fmt.Sprintf("ExternalSecret %s/%s synced", ns, name), nil
		}
		failed := es.Status.ForceSyncFailedValue == stamp
		if failed || now().After(deadline) {
			ready := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionReady)
			failing := ready != nil && ready.Status != metav1.ConditionTrue
			why := "no outcome yet"
			switch {
			case failed && failing:
				why = ready.Reason + ": " + ready.Message
			case failing:
				why += " (still failing from before: " + ready.Reason + ": " + ready.Message + ")"
			}
			return false, fmt.Sprintf("ExternalSecret %s/%s did not sync: %s", ns, name, oneLine(why)), nil
		}
		select {
		case <-ctx.Done():
			return false, "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
