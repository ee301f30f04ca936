package restart

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// reloadKey is the key under which a bad reload annotation is warned
// about once.
const reloadKey = "watchword.io/reload"

// consumed is what a workload restarts for, by record key: the Secrets of
// its restart-on (when it opted in), the targets of the ExternalSecrets
// that list it, and its reloads. A reloaded Secret that an ExternalSecret
// writes goes with that ExternalSecret's rotations, as restart-on's do
// (so a first sync or a repair restarts nothing); the other Secrets and
// the ConfigMaps are watched objects, whose digests tell their changes.
// ok is false when nothing asks for restarts: every annotation that
// does, fails to parse (it is warned about), and no ExternalSecret lists
// the workload.
func (r *Reconciler) consumed(ctx context.Context, ref Ref, obj client.Object, optedIn bool, listers []*v1alpha1.ExternalSecret) (
	used map[string]Usage, watched map[Object]Usage, ok bool, err error) {
	ann, spec := obj.GetAnnotations(), &podTemplate(obj).Spec
	used, watched, ok = map[string]Usage{}, map[Object]Usage{}, len(listers) > 0
	if optedIn {
		reload := HasReload(ann)
		if _, named := ann[OnAnnotation]; named || !reload {
			// A restart-on that does not parse restarts nothing for it;
			// the reloads and the ExternalSecrets that list it still do.
			u, uerr := Consumed(ann[OnAnnotation], spec)
			ok = !r.warn(obj, ref, OnAnnotation, uerr) || ok
			maps.Copy(used, u)
		}
		if reload {
			rl, rerr := Reloads(ann, spec)
			ok = !r.warn(obj, ref, reloadKey, rerr) || ok
			for o, u := range rl.Objects {
				written := false
				if o.Kind == KindSecret {
					writers, werr := targetindex.Writers(ctx, r.Client, targetindex.Field, ref.Namespace, o.Name)
					if werr != nil {
						return nil, nil, false, fmt.Errorf("listing the ExternalSecrets of Secret %q: %w", o.Name, werr)
					}
					written = len(writers) > 0
				}
				if written {
					addUsage(used, o.Name, u)
					continue
				}
				watched[o] = u
				used[o.Key()] = u
			}
		}
	}
	addListed(used, listers, spec)
	return used, watched, ok, nil
}

// addUsage adds a use of a Secret to what a workload consumes.
func addUsage(used map[string]Usage, name string, u Usage) {
	prev, ok := used[name]
	switch {
	case !ok:
		used[name] = u
	case prev.Whole || u.Whole:
		used[name] = Usage{Whole: true}
	default:
		for k := range u.Keys {
			prev.addKey(k)
		}
		used[name] = prev
	}
}

// digests are the digests of the watched objects now, by record key.
func (r *Reconciler) digests(ctx context.Context, ns string, watched map[Object]Usage) (map[string]string, error) {
	if len(watched) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(watched))
	for o, u := range watched {
		d, err := r.objects.digest(ctx, ns, o, u)
		if err != nil {
			return nil, err
		}
		out[o.Key()] = d
	}
	return out, nil
}

// withDigests records the digests of now in the plan.
func (p Plan) withDigests(cur map[string]string) Plan {
	if !maps.Equal(p.Next.Digests, cur) {
		p.Next.Digests = cur
		p.Changed = true
	}
	return p
}

// envDigest is the value of DigestEnv for a restart by the env strategy:
// a digest of the digests of every object the workload restarts for, of
// the keys it uses; "" for the annotation strategy, and for a Rollout
// (restarted by spec.restartAt, which leaves its template alone). An env
// strategy that does not parse is warned about, and the annotation one
// is used.
func (r *Reconciler) envDigest(ctx context.Context, ref Ref, obj client.Object, used map[string]Usage) (string, error) {
	strategy, err := Strategy(obj.GetAnnotations())
	r.warn(obj, ref, StrategyAnnotation, err)
	if strategy != StrategyEnv || r.kind.name == rolloutKind.name {
		return "", nil
	}
	h := sha256.New()
	for _, key := range slices.Sorted(maps.Keys(used)) {
		o, ok := objectOf(key)
		if !ok {
			o = Object{KindSecret, key}
		}
		d, err := r.objects.digest(ctx, ref.Namespace, o, used[key])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s=%s;", strings.ToLower(o.Kind)+"/"+o.Name, currentForm(d))
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// settled is the plan with the restart it owes settled without one.
func (p Plan) settled() Plan {
	p.Next, p.Restart, p.Changed = p.Next.Restarted(), false, true
	return p
}

// templateHasDigest tells whether every container of obj's pod template
// holds DigestEnv with the value d already: a patch of the env strategy
// would change no pod.
func templateHasDigest(obj client.Object, d string) bool {
	cs := podTemplate(obj).Spec.Containers
	if len(cs) == 0 {
		return false
	}
	for _, c := range cs {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == DigestEnv && e.Value == d && e.ValueFrom == nil }) {
			return false
		}
	}
	return true
}
