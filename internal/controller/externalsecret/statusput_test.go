package externalsecret

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// TestStatusPutSendsTheObjectAndTakesBackTheStoredStatus checks the
// request statusPut sends (a PUT of the status subresource carrying the
// whole object) and that it takes the stored status and resourceVersion
// from the answer, and the API server's errors as they are.
func TestStatusPutSendsTheObjectAndTakesBackTheStoredStatus(t *testing.T) {
	var got struct {
		method, path string
		body         v1alpha1.ExternalSecret
	}
	answer := func(w http.ResponseWriter, sent v1alpha1.ExternalSecret) {
		sent.ResourceVersion = "43"
		sent.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "watchword", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}}
		sent.Status.Phase = "as stored"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(sent)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.method, got.path = r.Method, r.URL.Path
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &got.body); err != nil {
			t.Errorf("body: %v", err)
		}
		if got.body.Name == "conflicting" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "externalsecrets"}, got.body.Name, nil).Status())
			return
		}
		answer(w, got.body)
	}))
	defer srv.Close()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rc, err := apiutil.RESTClientForGVK(v1alpha1.GroupVersion.WithKind("ExternalSecret"), false, false,
		&rest.Config{Host: srv.URL}, serializer.NewCodecFactory(scheme), srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	p := &statusPut{rest: rc}

	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", ResourceVersion: "42"}}
	es.Spec.Target.Name = "db"
	es.Status.Phase = "as sent"
	es.Status.Target = "db"
	if err := p.put(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	if got.method != http.MethodPut || got.path != "/apis/"+v1alpha1.GroupVersion.String()+"/namespaces/ns/externalsecrets/db/status" {
		t.Errorf("sent %s %s, want PUT of the status subresource", got.method, got.path)
	}
	if got.body.ResourceVersion != "42" || got.body.Spec.Target.Name != "db" || got.body.Status.Phase != "as sent" ||
		got.body.Kind != "ExternalSecret" || got.body.APIVersion != v1alpha1.GroupVersion.String() {
		t.Errorf("sent %+v, want the whole object with its kind, resourceVersion 42 and the new status", got.body)
	}
	if es.ResourceVersion != "43" || es.Status.Phase != "as stored" || es.Status.Target != "db" || es.Spec.Target.Name != "db" {
		t.Errorf("after the write: resourceVersion %q, status %+v, spec %+v; want the stored resourceVersion and status, the spec unchanged", es.ResourceVersion, es.Status, es.Spec)
	}
	if len(es.ManagedFields) != 0 {
		t.Errorf("managedFields were decoded from the answer")
	}

	conflicting := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "conflicting", ResourceVersion: "7"}}
	if err := p.put(context.Background(), conflicting); !apierrors.IsConflict(err) {
		t.Errorf("a conflict came back as %v, want the API server's conflict", err)
	}
	if conflicting.ResourceVersion != "7" {
		t.Errorf("a failed write changed the resourceVersion to %q", conflicting.ResourceVersion)
	}
}
