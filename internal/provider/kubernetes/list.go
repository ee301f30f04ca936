package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	typedauthv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/metadata"

	"github.com/watchword-dev/watchword/internal/engine"
)

// defaultListLimit is the page size of a listing that asks for none: the
// API server's own default is every object at once.
const defaultListLimit = 500

// Lister lists the Secrets of one namespace (CanList) by name prefix and
// labels (a listing's tags), with the API server's paging. It lists their
// metadata only (the API server sends PartialObjectMetadata, never data),
// so it needs the verb list on secrets in that namespace: the store's own
// identity decides which Secrets it may list, as it does for reads.
type Lister struct {
	secrets   metadata.ResourceInterface
	namespace string
	who       *identity
	// reviews asks the API server who the identity is, for a refusal's
	// message; nil when it cannot be asked.
	reviews typedauthv1.SelfSubjectReviewInterface
}

func newLister(mc metadata.Interface, namespace string, who *identity, reviews typedauthv1.SelfSubjectReviewInterface) *Lister {
	return &Lister{secrets: mc.Resource(secretsResource).Namespace(namespace), namespace: namespace, who: who, reviews: reviews}
}

// List returns one page of the namespace's Secrets whose names begin with
// the prefix and that carry the request's tags as labels; each with its
// resourceVersion (the version a read returns) and labels. The API server
// cannot select by a name's prefix, so the prefix is applied to each page:
// a page may hold fewer names than its limit.
func (l *Lister) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	sel, err := labels.ValidatedSelectorFromSet(req.Tags)
	if err != nil {
		return engine.ListPage{}, fmt.Errorf("listing Secrets in namespace %s: the tags to list by are not labels (%s); change them: %w",
			l.namespace, strings.Join(labelProblems(req.Tags), "; "), engine.ErrInvalidConfig)
	}
	limit := int64(req.Limit)
	if limit <= 0 {
		limit = defaultListLimit
	}
	list, err := l.secrets.List(ctx, metav1.ListOptions{LabelSelector: sel.String(), Limit: limit, Continue: req.PageToken})
	if err != nil {
		return engine.ListPage{}, l.classify(ctx, err, req.PageToken != "")
	}
	out := engine.ListPage{NextPageToken: list.Continue}
	for _, m := range list.Items {
		if !strings.HasPrefix(m.Name, req.Prefix) {
			continue
		}
		out.Items = append(out.Items, engine.ListItem{Key: m.Name, Version: m.ResourceVersion, Tags: m.Labels})
	}
	return out, nil
}

// labelProblems names the tags that cannot be labels, by key: a label's
// value is not secret, but it is the user's input and is not repeated.
func labelProblems(tags map[string]string) []string {
	var out []string
	for k, v := range tags {
		switch {
		case len(validation.IsQualifiedName(k)) > 0:
			out = append(out, fmt.Sprintf("tag %q: the key is not a label key", k))
		case len(validation.IsValidLabelValue(v)) > 0:
			out = append(out, fmt.Sprintf("tag %q: the value is not a label value", k))
		}
	}
	slices.Sort(out)
	return out
}

// classify turns an error of a listing into an engine error class; a
// refusal names the identity and the request, never the API server's
// text.
func (l *Lister) classify(ctx context.Context, err error, paging bool) error {
	request := fmt.Sprintf(`list Secrets in namespace %q (verb "list", resource "secrets", API group "")`, l.namespace)
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the API server does not let %s %s; to list Secrets, a Role bound to it must allow list on secrets there: %w",
			l.who.describe(ctx, l.reviews), request, engine.ErrPermissionDenied)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the store's credentials were rejected by the API server (%s): %w", l.who.describe(ctx, nil), engine.ErrPermissionDenied)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("listing Secrets in namespace %s: %w", l.namespace, engine.ErrThrottled)
	case paging && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)):
		return fmt.Errorf("listing Secrets in namespace %s: the page token expired; the listing starts again from its first page: %w", l.namespace, engine.ErrUnavailable)
	default:
		return fmt.Errorf("listing Secrets in namespace %s: %v: %w", l.namespace, apiReason(err), engine.ErrUnavailable)
	}
}
