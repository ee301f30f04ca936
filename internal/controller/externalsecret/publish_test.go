package externalsecret

import (
	"errors"
	"slices"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

func publishingES(pc *v1alpha1.ExternalSecretPublication, policy v1alpha1.CreationPolicy, status ...v1alpha1.PushSecretDestinationStatus) *v1alpha1.ExternalSecret {
	es := &v1alpha1.ExternalSecret{}
	es.Namespace, es.Name = "ns", "es"
	es.Spec.SecretStoreRef = v1alpha1.StoreRef{Name: "source", Kind: v1alpha1.SecretStoreKind}
	es.Spec.Target.CreationPolicy = policy
	es.Spec.PublishConnectionDetailsTo = pc
	es.Status.PublishedTo = status
	return es
}

func TestPublishFinalizerAndRetention(t *testing.T) {
	dest := func(policy v1alpha1.DeletionPolicy) *v1alpha1.ExternalSecretPublication {
		return &v1alpha1.ExternalSecretPublication{PushSecretDestination: v1alpha1.PushSecretDestination{Name: "d"}, DeletionPolicy: policy}
	}
	published := v1alpha1.PushSecretDestinationStatus{Name: "d", StoreKind: "SecretStore", StoreName: "default"}
	cases := []struct {
		name                      string
		es                        *v1alpha1.ExternalSecret
		retains, needs, forTarget bool
	}{
		{name: "no publication", es: publishingES(nil, v1alpha1.CreationPolicyOwner), retains: true},
		{name: "Delete by default", es: publishingES(dest(""), v1alpha1.CreationPolicyNone), needs: true},
		{name: "Delete with an owned target", es: publishingES(dest(v1alpha1.DeletionPolicyDelete), v1alpha1.CreationPolicyOwner), needs: true},
		{name: "Retain", es: publishingES(dest(v1alpha1.DeletionPolicyRetain), v1alpha1.CreationPolicyNone), retains: true},
		// Removing the block removes its deletion policy: nothing is
		// deleted for it.
		{name: "block removed after publishing", es: publishingES(nil, v1alpha1.CreationPolicyNone, published), retains: true},
		{name: "Merge target", es: publishingES(dest(v1alpha1.DeletionPolicyRetain), v1alpha1.CreationPolicyMerge), retains: true, needs: true, forTarget: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := publishRetains(tc.es); got != tc.retains {
				t.Errorf("publishRetains = %v, want %v", got, tc.retains)
			}
			if got := needsFinalizer(tc.es); got != tc.needs {
				t.Errorf("needsFinalizer = %v, want %v", got, tc.needs)
			}
			if got := targetNeedsFinalizer(tc.es); got != tc.forTarget {
				t.Errorf("targetNeedsFinalizer = %v, want %v", got, tc.forTarget)
			}
		})
	}
}

func TestStoreKeysNameEveryStoreReadOrPublishedTo(t *testing.T) {
	pc := &v1alpha1.ExternalSecretPublication{PushSecretDestination: v1alpha1.PushSecretDestination{Name: "d", ConfigRef: &v1alpha1.StoreRef{Name: "vault"}}}
	es := publishingES(pc, v1alpha1.CreationPolicyNone,
		v1alpha1.PushSecretDestinationStatus{Name: "old", StoreKind: "SecretStore", StoreName: "default"},
		v1alpha1.PushSecretDestinationStatus{Name: "d", StoreKind: "SecretStore", StoreName: "vault"})
	got := storeKeys(es)
	want := []string{"SecretStore/ns/source", "SecretStore/ns/vault", "SecretStore/ns/default"}
	if !slices.Equal(got, want) {
		t.Errorf("storeKeys = %v, want %v", got, want)
	}
	es.Spec.PublishConnectionDetailsTo, es.Status.PublishedTo = nil, nil
	if got := storeKeys(es); !slices.Equal(got, want[:1]) {
		t.Errorf("without publishing, storeKeys = %v", got)
	}
}

func TestWorstPublishFailure(t *testing.T) {
	terminal := failure.Terminalf(failure.NotOwned, "taken")
	retried := errors.New("connection refused")
	if got := worst(nil); got != nil {
		t.Errorf("no failures: %v", got)
	}
	if got := worst([]error{terminal, retried}); got != retried {
		t.Errorf("worst = %v, want the failure a retry may cure", got)
	}
	if got := worst([]error{terminal}); got != terminal {
		t.Errorf("worst = %v", got)
	}
}
