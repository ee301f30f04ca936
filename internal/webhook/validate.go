package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/publishing"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// Paths the webhook serves; the ValidatingWebhookConfiguration names them.
const (
	ExternalSecretPath = "/validate-externalsecret"
	PushSecretPath     = "/validate-pushsecret"
)

// errDecode marks a request whose object could not be decoded.
var errDecode = errors.New("decoding the object")

// Validator answers admission reviews of ExternalSecrets and PushSecrets.
type Validator struct {
	Claims  Claims
	Decoder admission.Decoder
}

// NewValidator builds a validator reading claims from r.
func NewValidator(r Claims, scheme *runtime.Scheme) *Validator {
	return &Validator{Claims: r, Decoder: admission.NewDecoder(scheme)}
}

// Handle implements admission.Handler for both kinds.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var msg string
	var err error
	switch req.Kind.Kind {
	case "ExternalSecret":
		msg, err = v.externalSecret(ctx, req)
	case "PushSecret":
		msg, err = v.pushSecret(ctx, req)
	default:
		return admission.Allowed("")
	}
	if err != nil {
		// The reconcile-time checks still hold: a failed lookup lets the
		// request through, as an unreachable webhook does.
		log := ctrl.LoggerFrom(ctx)
		if errors.Is(err, errDecode) {
			// A decoding error can quote the object, which may hold
			// literal template text: it is not logged.
			log.Info("admission: the object could not be decoded; allowing", "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
		} else {
			log.Error(err, "admission: looking up claims failed; allowing", "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
		}
		return admission.Allowed("").WithWarnings("Watchword could not check whether another object already writes here; the controller will report a conflict in the status")
	}
	if msg != "" {
		r := admission.Denied(msg)
		r.Result.Code = http.StatusConflict
		r.Result.Reason = "Conflict"
		return r
	}
	return admission.Allowed("")
}

func (v *Validator) externalSecret(ctx context.Context, req admission.Request) (string, error) {
	var es v1alpha1.ExternalSecret
	if err := v.Decoder.Decode(req, &es); err != nil {
		return "", errDecode
	}
	var old *v1alpha1.ExternalSecret
	if req.Operation == admissionv1.Update {
		old = &v1alpha1.ExternalSecret{}
		if err := v.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return "", errDecode
		}
	}
	self := "ExternalSecret/" + es.Namespace + "/" + es.Name
	if claim := targetClaim(&es); claim != "" && (old == nil || claim != targetClaim(old)) {
		kind, name, p := targetindex.Kind(&es), targetindex.Name(&es), creationPolicy(&es)
		hs, err := v.Claims.targetHolders(ctx, es.Namespace, kind, name, p, self)
		if err != nil {
			return "", err
		}
		if len(hs) > 0 {
			return targetMessage(kind, name, p, hs[0]), nil
		}
	}
	if old == nil {
		return v.destinationsTaken(ctx, &es, nil, self)
	}
	return v.destinationsTaken(ctx, &es, old, self)
}

func (v *Validator) pushSecret(ctx context.Context, req admission.Request) (string, error) {
	var ps v1alpha1.PushSecret
	if err := v.Decoder.Decode(req, &ps); err != nil {
		return "", errDecode
	}
	var old *v1alpha1.PushSecret
	if req.Operation == admissionv1.Update {
		old = &v1alpha1.PushSecret{}
		if err := v.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return "", errDecode
		}
	}
	self := "PushSecret/" + ps.Namespace + "/" + ps.Name
	if old == nil {
		return v.destinationsTaken(ctx, &ps, nil, self)
	}
	return v.destinationsTaken(ctx, &ps, old, self)
}

// destinationsTaken checks each destination obj newly publishes to (one
// its old version, nil on create, did not already name).
func (v *Validator) destinationsTaken(ctx context.Context, obj, old client.Object, self string) (string, error) {
	var had []string
	if old != nil {
		had = destinationKeys(old)
	}
	for _, d := range destinations(obj) {
		if slices.Contains(had, destinationKey(d)) {
			continue
		}
		hs, err := v.Claims.destinationHolders(ctx, obj.GetNamespace(), d, self)
		if err != nil {
			return "", err
		}
		if len(hs) > 0 {
			ref := publishing.StoreRef(d)
			return fmt.Sprintf("remote secret %q of %s %q is already published by %s, which got there first: "+
				"publish to another name or store, or delete %s (or remove that destination from it) first", d.Name, ref.Kind, ref.Name, hs[0], hs[0]), nil
		}
	}
	return "", nil
}

// targetMessage says who holds a target and what to do.
func targetMessage(kind, name string, p v1alpha1.CreationPolicy, h holder) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q of namespace %s is already written by %s, which got there first", kind, name, h.Namespace, h)
	if p == v1alpha1.CreationPolicyMerge {
		fmt.Fprintf(&b, " and owns the whole %s (creationPolicy Owner)", kind)
	}
	b.WriteString(": choose another spec.target.name")
	if p == v1alpha1.CreationPolicyOwner {
		b.WriteString(", use creationPolicy Merge on every ExternalSecret that writes into it (each with its own keys),")
	}
	fmt.Fprintf(&b, " or delete %s first", h)
	return b.String()
}
