package pushsecret

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/publishing"
)

// maxTargets bounds the remote secrets of one PushSecret with
// secretSelector: matching Secrets times destinations. (status holds one
// entry each, and removed ones waiting to be unpublished.)
const maxTargets = 128

// Selections lists the Secrets of a namespace whose labels match a
// selector (secretwatch.Watch).
type Selections interface {
	Matching(ctx context.Context, ns string, sel labels.Selector) ([]string, error)
}

// origin is one Secret to publish and what it publishes; err, when set,
// says why it publishes nothing (a selected key it lacks, a template that
// fails over it), and its remote secrets keep what they hold.
type origin struct {
	name        string
	publication engine.Publication
	// keys are the names of the published fields, for events.
	keys []string
	err  error
}

// target is one remote secret to publish to: a destination of the spec,
// its name made for one source. err, when set, refuses it before anything
// is written (a collision, or its source's error).
type target struct {
	dest v1alpha1.PushSecretDestination
	src  *origin
	err  error
}

// placeholder is {{ .secretName }} in a destination name, spaces inside
// the braces allowed, as the CRD's rule accepts it.
var placeholder = regexp.MustCompile(`\{\{ *\.secretName *\}\}`)

// selector is the PushSecret's secretSelector as a labels.Selector.
func selector(ps *v1alpha1.PushSecret) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(ps.Spec.SecretSelector)
	if err != nil {
		return nil, failure.Terminalf(failure.InvalidSecretSelector, "spec.secretSelector cannot be used: %s (nothing published was changed)", failure.Redact(err))
	}
	return sel, nil
}

// readSelected reads every Secret of the PushSecret's namespace that
// secretSelector matches, and only those: the names come from a watch
// that the API server filters by the selector, and a Secret read whose
// labels no longer match (relabelled meanwhile) is left out unused.
func (r *Reconciler) readSelected(ctx context.Context, s *scope) error {
	ps := s.ps
	sel, err := selector(ps)
	if err != nil {
		return err
	}
	names, err := r.Selected.Matching(ctx, ps.Namespace, sel)
	if err != nil {
		return err
	}
	if n := len(names) * len(ps.Spec.Destinations); n > maxTargets {
		return failure.Terminalf(failure.InvalidSecretSelector,
			"spec.secretSelector matches %d Secrets, which with %d destinations make %d remote secrets; a PushSecret publishes at most %d: narrow the selector or split the Secrets over several PushSecrets (nothing published was changed)",
			len(names), len(ps.Spec.Destinations), n, maxTargets)
	}
	for _, name := range names {
		var src corev1.Secret
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ps.Namespace, Name: name}, &src); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading Secret %q to publish: %w", name, err)
		}
		if !sel.Matches(labels.Set(src.Labels)) {
			continue
		}
		s.sources = append(s.sources, selectSource(ps, name, src.Data))
	}
	s.targets = expand(ps, s.sources)
	return nil
}

// expand makes the targets: with secretName the destinations as they
// are; with secretSelector each destination for each source, named with
// the source's name in place of {{ .secretName }}. Two sources that would
// meet in one remote secret (of one store) are both refused there, by
// one target that names them: nothing is written to it.
func expand(ps *v1alpha1.PushSecret, sources []*origin) []target {
	if ps.Spec.SecretSelector == nil {
		out := make([]target, 0, len(ps.Spec.Destinations))
		for _, d := range ps.Spec.Destinations {
			out = append(out, target{dest: d, src: sources[0], err: sources[0].err})
		}
		return out
	}
	type key struct{ kind, store, name string }
	var out []target
	at := map[key]int{}
	from := map[key][]string{}
	for _, d := range ps.Spec.Destinations {
		for _, src := range sources {
			t := target{dest: d, src: src, err: src.err}
			t.dest.Name = placeholder.ReplaceAllLiteralString(d.Name, src.name)
			ref := publishing.StoreRef(d)
			k := key{ref.Kind, ref.Name, t.dest.Name}
			from[k] = append(from[k], fmt.Sprintf("Secret %q (destination %q)", src.name, d.Name))
			if i, seen := at[k]; seen {
				out[i].src = nil
				out[i].err = failure.Terminalf(failure.RemoteNameCollision,
					"%s would all be published to remote secret %q of %s: none is written there and it keeps what it holds; give the destinations names that cannot meet, or relabel a Secret",
					strings.Join(from[k], " and "), t.dest.Name, publishing.DescribeStore(ps.Namespace, v1alpha1.PushSecretDestinationStatus{StoreKind: ref.Kind, StoreName: ref.Name}))
				continue
			}
			at[k] = len(out)
			out = append(out, t)
		}
	}
	return out
}

// selectedNames lists, for messages, the Secrets published.
func selectedNames(s *scope) []string {
	out := make([]string, 0, len(s.sources))
	for _, src := range s.sources {
		out = append(out, src.name)
	}
	slices.Sort(out)
	return out
}
