package externalsecret

import (
	"hash/fnv"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// This file is the scheduling policy of ExternalSecrets: every rule about
// when a sync is due, how old a shared read may be to serve it, and when
// and at which priority the next reconcile comes. It is pure: it reads
// nothing but its arguments, and the time is the reconcile's (from the
// injected clock).

// defaultRefresh applies when spec.refreshInterval is unset.
const defaultRefresh = time.Hour

// conflictRetry is how soon a sync that met a concurrent change runs again
// (by then the cache shows the change).
const conflictRetry = time.Second

// targetMissingRecheck is how often a Merge target that does not exist is
// looked for again. The Secret's creation also queues the ExternalSecret;
// this is a safety net.
const targetMissingRecheck = 5 * time.Minute

// terminalRecheck is how often an ExternalSecret whose sync failed for
// good (a terminal failure) is synced again all the same: its spec, store,
// templates and target queue it when they change, but the store's data,
// which may be the cause (a key that is not a valid Secret key, data too
// large for a Secret), is only seen at a refresh. A missing Merge target is
// looked for every targetMissingRecheck; with refreshInterval 0, only a
// change queues it.
func terminalRecheck(es *v1alpha1.ExternalSecret, reason failure.Reason) time.Duration {
	if reason == failure.TargetMissing {
		return targetMissingRecheck
	}
	return refreshInterval(es)
}

// schedule is what the policy decides from: one ExternalSecret's status
// and inputs, at one moment.
type schedule struct {
	now time.Time
	// interval is spec.refreshInterval (0: no periodic refresh).
	interval time.Duration
	// offset is the ExternalSecret's phase within its interval.
	offset time.Duration
	// lastRead is status.refreshTime: when the data was last read; nil
	// before the first sync.
	lastRead *time.Time
	// forced: the force-sync annotation has a value not yet synced.
	forced bool
	// inputsChanged: the spec, the store or a template ConfigMap changed
	// since the last sync.
	inputsChanged bool
	// generationChanged: the spec changed since the last sync.
	generationChanged bool
	// notified maps the remote keys this ExternalSecret reads that were
	// announced changed (notify.go) and not synced since, to when they
	// were.
	notified map[string]time.Time
}

func newSchedule(es *v1alpha1.ExternalSecret, now time.Time, store, inputs string) schedule {
	s := schedule{
		now:               now,
		interval:          refreshInterval(es),
		forced:            forcePending(es),
		inputsChanged:     inputs != es.Status.InputsVersion,
		generationChanged: es.Generation != es.Status.ObservedGeneration,
	}
	s.offset = phaseOffset(es, store, max(s.interval, time.Second))
	if es.Status.RefreshTime != nil {
		t := es.Status.RefreshTime.Time
		s.lastRead = &t
	}
	return s
}

func refreshInterval(es *v1alpha1.ExternalSecret) time.Duration {
	if es.Spec.RefreshInterval == nil {
		return defaultRefresh
	}
	return es.Spec.RefreshInterval.Duration
}

// forcePending tells whether the force-sync annotation holds a value that
// has not been synced yet.
func forcePending(es *v1alpha1.ExternalSecret) bool {
	force := es.Annotations[conditions.ForceSyncAnnotation]
	return force != "" && force != es.Status.ForceSyncedValue
}

// slack is how early a timer may fire and still count as on time: then
// the read of one interval ago is too old to serve.
func (s schedule) slack() time.Duration {
	return min(s.interval/100, time.Second)
}

// withNotices sets the keys announced changed: of those given (remote key
// to the time of its latest announcement), the ones the ExternalSecret
// reads.
func (s schedule) withNotices(es *v1alpha1.ExternalSecret, notices map[string]time.Time) schedule {
	if len(notices) == 0 {
		return s
	}
	s.notified = map[string]time.Time{}
	for _, ref := range engine.Refs(&es.Spec) {
		if at, ok := notices[ref.Key]; ok {
			s.notified[ref.Key] = at
		}
	}
	return s
}

// due tells whether the store must be read: the sync is forced, it never
// ran, an input changed, a key it reads was announced changed, or the
// periodic refresh time has come.
func (s schedule) due() bool {
	if s.forced || s.lastRead == nil || s.inputsChanged || len(s.notified) > 0 {
		return true
	}
	if s.interval <= 0 {
		return false
	}
	return !s.now.Add(s.slack()).Before(nextRefresh(*s.lastRead, s.interval, s.offset))
}

// maxAge is how old a shared read may be to serve a sync: a forced sync
// reads anew; otherwise a read younger than the refresh interval is fresh
// enough, less the slack when the sync is due (so that a refresh never
// takes the previous refresh's read). With refreshInterval 0 a spec change
// reads anew, while a drift repair reuses what was read.
func (s schedule) maxAge() time.Duration {
	var age time.Duration
	switch {
	case s.forced:
		return 0
	case s.interval > 0:
		age = s.interval
	case s.generationChanged:
		return 0
	default:
		age = 24 * time.Hour
	}
	if s.due() && age > s.slack() {
		age -= s.slack()
	}
	return age
}

// readAfter tells, for the keys announced changed, the time a read must
// be younger than: one read made after the announcement serves every
// ExternalSecret that reads the key, and no read made before it does.
// The other keys keep maxAge.
func (s schedule) readAfter() map[string]time.Time {
	if len(s.notified) == 0 {
		return nil
	}
	return s.notified
}

// next is the result that schedules the next periodic refresh, after a
// sync or a check that found nothing to do. lastRead is the read time in
// effect after it. Periodic refreshes queue behind new and changed
// objects, at low priority.
func (s schedule) next(lastRead *time.Time) ctrl.Result {
	if s.interval <= 0 || lastRead == nil {
		return ctrl.Result{}
	}
	wait := max(nextRefresh(*lastRead, s.interval, s.offset).Sub(s.now), time.Second)
	return ctrl.Result{RequeueAfter: wait, Priority: ptr.To(handler.LowPriority)}
}

// phaseOffset places an ExternalSecret's refreshes on a fixed phase of its
// interval. ExternalSecrets that read the same objects of the same store
// share most of their phase, so one provider read serves them all; a small
// per-object spread keeps their writes from landing in the same second.
// Phases are spread evenly over the interval, so refreshes never line up,
// not even after a restart.
func phaseOffset(es *v1alpha1.ExternalSecret, store string, interval time.Duration) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(store))
	for _, ref := range engine.Refs(&es.Spec) {
		h.Write([]byte{0})
		h.Write([]byte(ref.Key))
		h.Write([]byte{0})
		h.Write([]byte(ref.Version))
	}
	shared := time.Duration(h.Sum64() % uint64(interval))
	spread := interval / 10
	if spread <= 0 {
		return shared
	}
	own := fnv.New64a()
	own.Write([]byte(es.UID))
	return shared + time.Duration(own.Sum64()%uint64(spread))
}

// nextRefresh is the first phase point at least half an interval after the
// last read. After the first cycle, refreshes come exactly one interval
// apart.
func nextRefresh(last time.Time, interval, offset time.Duration) time.Time {
	base := last.Add(interval / 2).UnixNano()
	off := int64(offset)
	iv := int64(interval)
	k := (base - off + iv - 1) / iv
	if base-off < 0 {
		k = (base - off) / iv
	}
	return time.Unix(0, off+k*iv)
}
