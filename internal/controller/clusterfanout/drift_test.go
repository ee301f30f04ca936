package clusterfanout

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestCoversIgnoresDefaultsAndSeesEdits(t *testing.T) {
	want := v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "s", Kind: v1alpha1.ClusterSecretStoreKind},
		Data: []v1alpha1.ExternalSecretData{{SecretKey: "k", RemoteRef: v1alpha1.RemoteReference{Key: "key"}}}}
	defaulted := *want.DeepCopy()
	defaulted.RefreshInterval = &metav1.Duration{Duration: time.Hour}
	defaulted.Target.CreationPolicy = v1alpha1.CreationPolicyOwner
	edited := *defaulted.DeepCopy()
	edited.Data[0].RemoteRef.Key = "other"
	extra := *defaulted.DeepCopy()
	extra.Data = append(extra.Data, v1alpha1.ExternalSecretData{SecretKey: "x", RemoteRef: v1alpha1.RemoteReference{Key: "x"}})
	for _, tc := range []struct {
		name string
		got  v1alpha1.ExternalSecretSpec
		want bool
	}{
		{"the same", want, true},
		{"with the API server's defaults", defaulted, true},
		{"a field edited", edited, false},
		{"a list item added", extra, false},
	} {
		if got := covers(want, tc.got); got != tc.want {
			t.Errorf("%s: covers = %v, want %v", tc.name, got, tc.want)
		}
	}
	unsetKind := *want.DeepCopy()
	unsetKind.SecretStoreRef.Kind = ""
	if !covers(unsetKind, defaulted) {
		t.Error("a field left empty in the cluster object's spec counts as unset")
	}
	if !covers(map[string]string(nil), map[string]string{"kubectl": "x"}) {
		t.Error("no labels to stamp covers any labels")
	}
	if !covers(map[string]string{"a": "1"}, map[string]string{"a": "1", "b": "2"}) || covers(map[string]string{"a": "1"}, map[string]string{"a": "2"}) {
		t.Error("labels: a map covers another when every key it has holds its value there")
	}
}
