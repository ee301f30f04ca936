package agent

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

// TestFollowRefusesAnExternalSecretTheControllerWrites: an ExternalSecret
// whose creationPolicy is not None is refused with a message that names
// the policy and says what to change, and does not end with an error
// class's text that has nothing to do with it.
func TestFollowRefusesAnExternalSecretTheControllerWrites(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "owned"}}
	es.Spec.SecretStoreRef = v1alpha1.StoreRef{Kind: v1alpha1.SecretStoreKind, Name: "vault"}
	es.Spec.Target.CreationPolicy = v1alpha1.CreationPolicyOwner
	a := &Agent{opts: Options{Kube: fake.NewClientBuilder().WithScheme(scheme).WithObjects(es).Build()}}
	_, _, _, err := a.followed("team", "owned")(context.Background())
	if err == nil {
		t.Fatal("an ExternalSecret with creationPolicy Owner was followed")
	}
	msg := err.Error()
	for _, want := range []string{`ExternalSecret "team/owned"`, `creationPolicy "Owner"`, "set its target.creationPolicy to None"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "store configuration") {
		t.Errorf("message %q blames the store's configuration", msg)
	}
	if c := failure.Classify(err); !c.Terminal {
		t.Errorf("class %+v: only an edit of the ExternalSecret helps", c)
	}
}
