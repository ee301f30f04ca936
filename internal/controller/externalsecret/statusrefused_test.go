package externalsecret

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/failure"
)

func TestSyncedKeysAreBounded(t *testing.T) {
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%05d", i)
	}
	listed, count := syncedKeys(keys)
	if len(listed) != maxSyncedKeys || count != 5000 || listed[0] != "k00000" || listed[maxSyncedKeys-1] != keys[maxSyncedKeys-1] {
		t.Fatalf("5000 keys: %d listed (first %q), count %d; want the first %d and 5000", len(listed), listed[0], count, maxSyncedKeys)
	}
	if listed, count := syncedKeys(keys[:3]); len(listed) != 3 || count != 3 {
		t.Fatalf("3 keys: %v, %d", listed, count)
	}
	if listed, count := syncedKeys(nil); len(listed) != 0 || count != 0 {
		t.Fatalf("no keys: %v, %d", listed, count)
	}
}

// TestSyncOfManyKeysIsRecorded: a dataFrom of 5,000 fields is written, and
// its status, which the API server would refuse with 5,000 syncedKeys, is
// recorded with the first 1,024 and the count.
func TestSyncOfManyKeysIsRecorded(t *testing.T) {
	fields := make([]string, 5000)
	for i := range fields {
		fields[i] = fmt.Sprintf(`"f%04d":"x"`, i)
	}
	h := newHarness(t, "{"+strings.Join(fields, ",")+"}")
	h.n.refuseStatus = refuseMoreKeysThan(maxSyncedKeys)
	es := h.es(t)
	es.Spec.Data = nil
	es.Spec.DataFrom = []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "db"}}}
	if err := h.c.Update(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	h.reconcile(t)
	es = h.es(t)
	if c := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %+v", c)
	}
	if es.Status.SyncedKeyCount != 5000 || len(es.Status.SyncedKeys) != maxSyncedKeys || es.Status.SyncedKeys[0] != "f0000" {
		t.Fatalf("syncedKeyCount %d, %d syncedKeys", es.Status.SyncedKeyCount, len(es.Status.SyncedKeys))
	}
}

// refuseMoreKeysThan is an API server that refuses a status with more
// syncedKeys than n, as the CRD's MaxItems does, with an error that quotes
// a value (as some of the API server's do).
func refuseMoreKeysThan(n int) func(*v1alpha1.ExternalSecret) error {
	return func(es *v1alpha1.ExternalSecret) error {
		if len(es.Status.SyncedKeys) <= n {
			return nil
		}
		return apierrors.NewInvalid(schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "ExternalSecret"}, es.Name, field.ErrorList{
			field.TooMany(field.NewPath("status", "syncedKeys"), len(es.Status.SyncedKeys), n),
			field.Invalid(field.NewPath("status", "syncedKeys").Index(0), "hunter2-value", "echoed"),
		})
	}
}

// TestRefusedStatusIsTold: when the API server refuses the status of a
// sync, the status as stored does not go on saying the sync before it was
// the last: Ready turns False (StatusRejected, stalled), saying that the
// status could not be written, why (field paths and reasons, no value),
// and what the sync itself concluded; a Warning event says it too, and
// the refusal is not retried with backoff.
func TestRefusedStatusIsTold(t *testing.T) {
	h := newHarness(t, "hunter2-value")
	h.reconcile(t)
	before := h.es(t)
	h.n.refuseStatus = refuseMoreKeysThan(1)
	es := h.es(t)
	es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: "again", RemoteRef: v1alpha1.RemoteReference{Key: "db"}})
	es.Generation++
	if err := h.c.Update(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	res, err := h.r.Reconcile(context.Background(), h.req)
	if err != nil {
		t.Fatalf("a status the API server finds invalid is not retried with backoff: %v", err)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("requeue after %v, want the next sync or a recheck", res.RequeueAfter)
	}
	es = h.es(t)
	ready := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != string(failure.StatusRejected) {
		t.Fatalf("Ready = %+v, want False with StatusRejected", ready)
	}
	for _, want := range []string{"could not be written", "status.syncedKeys", "FieldValueTooMany", "the sync itself: SecretSynced"} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Ready's message %q does not say %q", ready.Message, want)
		}
	}
	t.Logf("told: %s", ready.Message)
	if strings.Contains(ready.Message, "hunter2") {
		t.Errorf("Ready's message repeats a value: %q", ready.Message)
	}
	if conditions.FindES(es.Status.Conditions, v1alpha1.ConditionStalled) == nil || es.Status.Phase != v1alpha1.PhaseFailed {
		t.Errorf("phase %s, conditions %+v: want Failed and Stalled", es.Status.Phase, es.Status.Conditions)
	}
	if es.Status.InputsVersion != before.Status.InputsVersion {
		t.Errorf("inputsVersion %q: the status written is not the one stored before", es.Status.InputsVersion)
	}
	var event string
	for len(h.events.Events) > 0 && event == "" {
		if ev := <-h.events.Events; strings.Contains(ev, string(failure.StatusRejected)) {
			event = ev
		}
	}
	if !strings.HasPrefix(event, "Warning") || !strings.Contains(event, "status.syncedKeys") || strings.Contains(event, "hunter2") {
		t.Errorf("event %q, want a Warning StatusRejected naming the field", event)
	}

	// Another reconcile meets the same refusal: the status that tells of
	// it is not written again.
	writes := h.n.statusWrites.Load()
	h.reconcile(t)
	if got := h.n.statusWrites.Load() - writes; got != 1 {
		t.Errorf("%d status writes, want the refused one only", got)
	}
}
