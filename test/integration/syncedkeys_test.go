package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// fieldsJSON is a JSON object of n fields, "f00000" to its last.
func fieldsJSON(n int) string {
	fields := make([]string, n)
	for i := range fields {
		fields[i] = fmt.Sprintf(`"f%05d":"x"`, i)
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// TestStatusTellsOfThousandsOfKeysAndOfItsOwnRefusal: a dataFrom of 5,000
// fields is written and its status recorded, with the first 1,024 keys and
// their count (5,000 keys would be refused by the CRD's bound). When the
// API server still refuses a status (here an admission policy standing in
// for any refusal), the status does not go on telling of the sync before:
// Ready turns False with StatusRejected, saying the status could not be
// written, why, and what the sync itself concluded, and a Warning event
// says it too; once the refusal ends, the status catches up.
func TestStatusTellsOfThousandsOfKeysAndOfItsOwnRefusal(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "big", value: fieldsJSON(5000)})
	newES(t, ns, "big", "store", withDataFrom("big", ""))
	var es *v1alpha1.ExternalSecret
	eventually(t, wait, func() (bool, string) {
		es = getES(t, ns, "big")
		c := readyCond(es)
		return c != nil && c.Status == metav1.ConditionTrue && es.Status.SyncedKeyCount == 5000,
			fmt.Sprintf("%s; syncedKeyCount %d", describeES(es), es.Status.SyncedKeyCount)
	})
	if n := len(es.Status.SyncedKeys); n != 1024 || es.Status.SyncedKeys[0] != "f00000" || es.Status.SyncedKeys[1023] != "f01023" {
		t.Fatalf("%d syncedKeys, want the first 1024 in order", n)
	}
	s, err := getSecret(ns, "big")
	must(t, err)
	if len(s.Data) != 5000 {
		t.Fatalf("the target has %d keys, want 5000", len(s.Data))
	}

	// A policy that refuses a status of more than 5,000 keys, in this
	// namespace only.
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-status"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{v1alpha1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"externalsecrets/status"}}}}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.metadata.namespace != %q || !has(object.status) || !has(object.status.syncedKeyCount) || object.status.syncedKeyCount <= 5000", ns),
				Message:    "more than 5000 keys", Reason: ptr.To(metav1.StatusReasonInvalid)}}}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-status"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	must(t, k8s.Create(ctx, policy))
	must(t, k8s.Create(ctx, binding))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding); _ = k8s.Delete(context.Background(), policy) })
	// The API server loads a policy in the background: wait until it
	// refuses a status of more keys (a dry run, which stores nothing).
	eventually(t, wait, func() (bool, string) {
		probe := getES(t, ns, "big")
		probe.Status.SyncedKeyCount = 5001
		err := k8s.Status().Update(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), fmt.Sprintf("the policy is not in effect yet: %v", err)
	})

	updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) { s.Spec.Fake.Data[0].Value = fieldsJSON(5001) })
	es = waitCondition(t, ns, "big", "StatusRejected", "could not be written", "its other fields show an earlier sync", "the sync itself: SecretSynced")
	t.Logf("told: %s", readyCond(es).Message)
	if es.Status.SyncedKeyCount != 5000 {
		t.Errorf("syncedKeyCount %d: the refused status was stored after all?", es.Status.SyncedKeyCount)
	}
	waitEvent(t, ns, "big", "StatusRejected", "could not be written")
	if s, err := getSecret(ns, "big"); err != nil || len(s.Data) != 5001 {
		t.Fatalf("the target was not written: %v", err)
	}

	must(t, k8s.Delete(ctx, binding))
	eventually(t, wait, func() (bool, string) {
		probe := getES(t, ns, "big")
		probe.Status.SyncedKeyCount = 5001
		err := k8s.Status().Update(ctx, probe, client.DryRunAll)
		return err == nil, fmt.Sprintf("the policy is still in effect: %v", err)
	})
	forceSync(t, ns, "big")
	eventually(t, wait, func() (bool, string) {
		es = getES(t, ns, "big")
		c := readyCond(es)
		return c != nil && c.Status == metav1.ConditionTrue && es.Status.SyncedKeyCount == 5001, describeES(es)
	})
}
