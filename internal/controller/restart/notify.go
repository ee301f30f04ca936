package restart

import (
	"context"
	"maps"
	"slices"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/notify"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// Notifier is told of restarts and of held restarts, as their events
// are (internal/notify queues them for the receivers configured). It must
// not block: a restart never waits for a notification.
type Notifier interface {
	Notify(ev notify.Event)
}

// notifyRestarted tells the Notifier, if any, of a restart made at `at`
// for what was owed, written by sources.
func (r *Reconciler) notifyRestarted(ref Ref, at time.Time, owed map[string]Owed, sources map[string][]*v1alpha1.ExternalSecret) {
	if r.Notifier == nil {
		return
	}
	r.Notifier.Notify(notify.Event{Type: notify.TypeRestarted, Time: at, Workload: workloadOf(ref), Secrets: rotated(owed, sources)})
}

// notifyHeld tells the Notifier, if any, of a hold told at `at`, with its
// reason and message, for what is owed. The ExternalSecrets that write
// the Secrets are read from the cache for their versions; one that cannot
// be read leaves its versions out.
func (r *Reconciler) notifyHeld(ctx context.Context, ref Ref, at time.Time, v Verdict, owed map[string]Owed) {
	if r.Notifier == nil {
		return
	}
	sources := map[string][]*v1alpha1.ExternalSecret{}
	for name := range owed {
		writers, err := targetindex.Writers(ctx, r.Client, targetindex.Field, ref.Namespace, name)
		if err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("listing the writers of a Secret for a notification", "secret", name, "error", err.Error())
			continue
		}
		for i := range writers {
			sources[name] = append(sources[name], &writers[i])
		}
	}
	r.Notifier.Notify(notify.Event{Type: notify.TypeHeld, Time: at, Workload: workloadOf(ref), Reason: v.Reason, Message: v.Message,
		Secrets: rotated(owed, sources)})
}

func workloadOf(ref Ref) notify.Workload {
	return notify.Workload{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// rotated describes the owed Secrets: names, keys, rotation times, and
// the versions their ExternalSecrets last synced. No value.
func rotated(owed map[string]Owed, sources map[string][]*v1alpha1.ExternalSecret) []notify.Secret {
	var out []notify.Secret
	for _, name := range slices.Sorted(maps.Keys(owed)) {
		o := owed[name]
		s := notify.Secret{Kind: KindSecret, Name: name, RotatedAt: o.At, Keys: slices.Clone(o.Keys), AnyKey: len(o.Keys) == 0}
		// A change of an object Watchword does not write (a reload): its
		// kind and name, and no ExternalSecret writes it.
		if obj, ok := objectOf(name); ok {
			s.Kind, s.Name = obj.Kind, obj.Name
		}
		for _, es := range sources[name] {
			src := notify.Source{Name: es.Name, TargetResourceVersion: es.Status.TargetResourceVersion}
			for _, v := range es.Status.Versions {
				src.Versions = append(src.Versions, notify.Version{Key: v.Key, Version: v.Version})
			}
			s.ExternalSecrets = append(s.ExternalSecrets, src)
		}
		out = append(out, s)
	}
	return out
}
