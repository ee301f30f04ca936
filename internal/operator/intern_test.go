package operator

import (
	"encoding/json"
	"fmt"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

const cachedES = `{"apiVersion":"external-secrets.x-k8s.io/v1alpha1","kind":"ExternalSecret",
"metadata":{"name":"%s","namespace":"team-a","uid":"u"},
"spec":{"secretStoreRef":{"kind":"ClusterSecretStore","name":"vault"},"refreshInterval":"1m",
 "target":{"creationPolicy":"Owner","deletionPolicy":"Retain"},
 "data":[{"secretKey":"password","remoteRef":{"key":"db/main","property":"password"}}]},
"status":{"phase":"Syncing","inputsVersion":"1|ClusterSecretStore//vault/x/1|","target":"%s",
 "syncedKeys":["password"],"versions":[{"key":"db/main","version":"7"}],
 "conditions":[{"type":"Ready","status":"True","reason":"SecretSynced","message":"synced from ClusterSecretStore \"vault\"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`

func decodeES(t *testing.T, name string) *v1alpha1.ExternalSecret {
	t.Helper()
	var es v1alpha1.ExternalSecret
	if err := json.Unmarshal(fmt.Appendf(nil, cachedES, name, name), &es); err != nil {
		t.Fatal(err)
	}
	return &es
}

func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestCachedExternalSecretsShareTheirCommonStrings(t *testing.T) {
	a, b := decodeES(t, "a"), decodeES(t, "b")
	if sameBytes(a.Status.Conditions[0].Message, b.Status.Conditions[0].Message) {
		t.Fatal("decoded objects already share their strings; the test shows nothing")
	}
	wantA := a.DeepCopy()
	for _, es := range []*v1alpha1.ExternalSecret{a, b} {
		if _, err := slimTransform(es); err != nil {
			t.Fatal(err)
		}
	}
	if !equality.Semantic.DeepEqual(a, wantA) {
		t.Fatalf("interning changed the object:\n%+v\nwant\n%+v", a, wantA)
	}
	for what, pair := range map[string][2]string{
		"namespace":         {a.Namespace, b.Namespace},
		"store name":        {a.Spec.SecretStoreRef.Name, b.Spec.SecretStoreRef.Name},
		"remote key":        {a.Spec.Data[0].RemoteRef.Key, b.Spec.Data[0].RemoteRef.Key},
		"condition message": {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
		"condition reason":  {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
		"inputs version":    {a.Status.InputsVersion, b.Status.InputsVersion},
		"synced key":        {a.Status.SyncedKeys[0], b.Status.SyncedKeys[0]},
		"creation policy":   {string(a.Spec.Target.CreationPolicy), string(b.Spec.Target.CreationPolicy)},
	} {
		if !sameBytes(pair[0], pair[1]) {
			t.Errorf("the %s is held twice", what)
		}
	}
	if !sameBytes(a.Status.Target, a.Name) {
		t.Error("status.target, equal to the name, is held apart from it")
	}
}
