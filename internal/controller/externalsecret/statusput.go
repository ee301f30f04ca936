package externalsecret

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	kjson "sigs.k8s.io/json"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// statusPut writes the status of ExternalSecrets and reads back from the
// answer only what the controller uses: the status as stored and the new
// resourceVersion. The request is client-go's own, as the client would
// send it.
//
// Tuning: controller-runtime's client decodes the whole answer, managedFields
// included, measured at half the CPU of the controller's status writes in a
// sync of 10,000 (-profile-sync; FINDINGS.md, "The controller's CPU"), though
// the CPU per ExternalSecret did not move beyond its spread; if that client
// decodes less, this can go back to r.Client.Status().Update.
type statusPut struct {
	rest rest.Interface
}

// newStatusPut makes a statusPut from the manager's configuration.
func newStatusPut(mgr ctrl.Manager) (*statusPut, error) {
	rc, err := apiutil.RESTClientForGVK(v1alpha1.GroupVersion.WithKind("ExternalSecret"), false, false,
		mgr.GetConfig(), serializer.NewCodecFactory(mgr.GetScheme()), mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	return &statusPut{rest: rc}, nil
}

// stored is the part of the answer statusPut reads.
type stored struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status v1alpha1.ExternalSecretStatus `json:"status"`
}

// put updates the status subresource of es, and sets its resourceVersion
// and status to the stored ones. Errors are the API server's, as the
// client returns them.
func (p *statusPut) put(ctx context.Context, es *v1alpha1.ExternalSecret) error {
	raw, err := p.rest.Put().Namespace(es.Namespace).Resource("externalsecrets").Name(es.Name).
		SubResource("status").Body(es).Do(ctx).Raw()
	if err != nil {
		return err
	}
	var back stored
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &back); err != nil {
		return err
	}
	es.ResourceVersion, es.Status = back.Metadata.ResourceVersion, back.Status
	return nil
}
