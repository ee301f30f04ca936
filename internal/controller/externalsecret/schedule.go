package externalsecret

import (
	"hash/fnv"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// This file is the scheduling policy of ExternalSecrets: every rule about
// when a sync is due, how old a shared read may be to serve it, when and
// at which priority the next reconcile comes, when a refresh that changed
// nothing writes the status, and when an ExternalSecret is stale. It is
// pure: it reads nothing but its arguments, and the time is the
// reconcile's (from the injected clock).
//
// Nothing written at rest. A refresh that brings nothing new (same data,
// versions, conditions and errors) writes nothing to the API server: the
// status is written when anything in it but the refresh time changes, and
// otherwise only to move status.refreshTime, at most once per status
// period (--status-refresh-period, one hour by default). That coarse write
// comes at the first refresh after a phase point of the ExternalSecret's
// own within the period (statusPhase, from a hash of its UID, so the
// writes of a fleet are spread over the period like its refreshes), and
// only at a phase point at least one period after the refreshTime in the
// status: none in the first period after a sync. It records the phase
// point itself as refreshTime (the refresh happened at it or up to one
// interval later), so the next phase point is exactly one period later
// and the writes keep their period however late a refresh runs. Writes
// for other reasons carry the exact time of the last refresh.
// Tuning, and a target of docs/benchmark.md: refreshes that wrote their
// time made about 167 status writes a second for 10,000 ExternalSecrets
// refreshing each minute, half what the API server takes (FINDINGS.md,
// "Refreshes and the steady state"); only if that target goes can every
// refresh write refreshTime again.
//
// The schedule in memory, and after a restart. Refreshes land at a fixed
// phase of each ExternalSecret's interval (phaseOffset): the k-th refresh
// is at offset + k·interval, whatever the time of the one before. The
// time of the last refresh that wrote nothing is kept in memory
// (freshness.go); the schedule takes the latest of it and
// status.refreshTime. A controller that starts has nothing in memory and
// a refreshTime up to a period old: counted from it, every ExternalSecret
// would be due at once (a herd), and the herd would repeat at every
// restart. Instead, a controller counts a synced ExternalSecret as read
// half an interval before it started (sinceStart) unless the status says
// later: its next refresh is its next phase point after the start. So
// after a restart refreshes continue at the phases they had, spread over
// the interval as before; none is due at once, and none waits more than
// one interval after the start (one and a half after a refresh the
// status shows within the half interval before it, as without a
// restart): no herd and no gap. A phase point that fell while no
// controller ran is not caught up at once: that would be the herd. An ExternalSecret that was never
// synced, failed its last sync, or whose spec, store, templates or target
// changed is synced at once as before; a forced sync, a notification and
// the backoff of errors are unchanged.
//
// Staleness. An ExternalSecret is overdue when its last successful
// refresh is more than two intervals old (its refresh at the next phase
// point after one interval did not succeed), and stale after
// staleIntervals intervals: its Fresh condition turns False with reason
// Stale. Both count from the same last refresh as the schedule, so after
// a start a controller counts at most from half an interval before it:
// it cannot tell from the coarse refreshTime how long before its start
// the last refresh was, and the status keeps that time for whoever looks.

// defaultRefresh applies when spec.refreshInterval is unset.
const defaultRefresh = time.Hour

// DefaultStatusPeriod is the default of --status-refresh-period: how often
// at most a refresh that changed nothing moves status.refreshTime.
const DefaultStatusPeriod = time.Hour

// staleIntervals is how many refresh intervals without a successful
// refresh make an ExternalSecret stale: enough that a failure retried
// with backoff for a while, or a refresh delayed behind a burst of work,
// is not called stale, few enough that an alert on the Fresh condition
// comes within minutes at the usual intervals.
const staleIntervals = 3

// overdueIntervals is how many refresh intervals after its last successful
// refresh an ExternalSecret counts as overdue in the metrics: its next
// refresh is due at most one and a half intervals after the last.
const overdueIntervals = 2

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
	// policy is spec.refreshPolicy ("" is Periodic).
	policy v1alpha1.RefreshPolicy
	// interval is spec.refreshInterval (0: no periodic refresh).
	interval time.Duration
	// offset is the ExternalSecret's phase within its interval.
	offset time.Duration
	// lastRead is when the data was last read: the latest of
	// status.refreshTime, the last refresh this instance made, and half an
	// interval before this instance started; nil before the first sync.
	lastRead *time.Time
	// written is status.refreshTime as it is in the status.
	written *time.Time
	// statusPeriod is how often at most a refresh that changed nothing
	// writes the status; statusPhase is this ExternalSecret's phase of it.
	statusPeriod time.Duration
	statusPhase  time.Duration
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

// memory is what one instance knows of an ExternalSecret beyond its
// status: the last refresh it made that the status may not show, when it
// started, and the status period it was given.
type memory struct {
	refreshed    *time.Time
	started      time.Time
	statusPeriod time.Duration
}

func newSchedule(es *v1alpha1.ExternalSecret, now time.Time, store, inputs string, m memory) schedule {
	s := schedule{
		now:               now,
		policy:            es.Spec.RefreshPolicy,
		interval:          refreshInterval(es),
		forced:            forcePending(es),
		inputsChanged:     inputs != es.Status.InputsVersion,
		generationChanged: es.Generation != es.Status.ObservedGeneration,
		statusPeriod:      m.statusPeriod,
	}
	// Times in the status have whole seconds: so have the period and
	// its phase points.
	s.statusPeriod = s.statusPeriod.Truncate(time.Second)
	if s.statusPeriod <= 0 {
		s.statusPeriod = DefaultStatusPeriod
	}
	s.offset = phaseOffset(es, store, max(s.interval, time.Second))
	s.statusPhase = statusPhase(es, s.statusPeriod)
	if es.Status.RefreshTime != nil {
		t := es.Status.RefreshTime.Time
		s.written = &t
	}
	s.lastRead = lastRefresh(es, s.interval, m)
	return s
}

// lastRefresh is when an ExternalSecret's data was last read successfully,
// as far as one instance can tell: the latest of status.refreshTime, the
// last refresh the instance made, and, when the status shows a sync, half
// an interval before the instance started (sinceStart); nil before the
// first sync.
func lastRefresh(es *v1alpha1.ExternalSecret, interval time.Duration, m memory) *time.Time {
	if es.Status.RefreshTime == nil {
		return nil
	}
	last := es.Status.RefreshTime.Time
	if m.refreshed != nil && m.refreshed.After(last) {
		last = *m.refreshed
	}
	if !m.started.IsZero() && interval > 0 {
		if floor := sinceStart(m.started, interval); floor.After(last) {
			last = floor
		}
	}
	return &last
}

// sinceStart is the read time an instance assumes for an ExternalSecret
// it has not refreshed yet, when the status shows an older one: half an
// interval before it started, so that the next refresh is the first phase
// point after the start (nextRefresh). The coarse status.refreshTime
// cannot tell the last refresh of the instance before; had it been
// trusted, every ExternalSecret would be due at once after a restart.
func sinceStart(started time.Time, interval time.Duration) time.Time {
	return started.Add(-interval / 2)
}

// refreshInterval is the interval of periodic refreshes; 0 for none (and
// for refreshPolicy OnChange and CreatedOnce, which have none).
func refreshInterval(es *v1alpha1.ExternalSecret) time.Duration {
	if p := es.Spec.RefreshPolicy; p == v1alpha1.RefreshOnChange || p == v1alpha1.RefreshCreatedOnce {
		return 0
	}
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
// reads. refreshPolicy OnChange and CreatedOnce take no notice: a store's
// data is not an input they follow.
func (s schedule) withNotices(es *v1alpha1.ExternalSecret, notices map[string]time.Time) schedule {
	if len(notices) == 0 || (s.policy != "" && s.policy != v1alpha1.RefreshPeriodic) {
		return s
	}
	s.notified = map[string]time.Time{}
	for key, at := range notices {
		if readsKey(es, key) {
			s.notified[key] = at
		}
	}
	return s
}

// due tells whether the store must be read: the sync is forced, it never
// ran, an input changed, a key it reads was announced changed, or the
// periodic refresh time has come. With refreshPolicy CreatedOnce only the
// first two.
func (s schedule) due() bool {
	if s.policy == v1alpha1.RefreshCreatedOnce {
		return s.forced || s.lastRead == nil
	}
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
// objects, at low priority (a tuning: queueAt in fanout.go).
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
//
// Tuning (with engine.Fetcher): one read a cycle per remote object, 985–1,000
// calls for 1,000 keys over 10,000 ExternalSecrets, the busiest second
// 1.78–1.89 times the mean (FINDINGS.md, "Refreshes and the steady state");
// without shared reads, a phase from the UID alone would do.
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

// statusPhase is an ExternalSecret's phase within the status period, in
// whole seconds (the resolution of times in the status), from its UID:
// the coarse status writes of a fleet are spread over the period.
func statusPhase(es *v1alpha1.ExternalSecret, period time.Duration) time.Duration {
	secs := uint64(period / time.Second)
	if secs == 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte("status/"))
	h.Write([]byte(es.UID))
	return time.Duration(h.Sum64()%secs) * time.Second
}

// coarseWrite tells whether a refresh that changed nothing else should
// write the status to move refreshTime, and the time to record: the
// latest phase point of the status period that is at least one period
// after the refreshTime in the status and not after now. None before the
// first sync is written (that sync writes anyway).
func (s schedule) coarseWrite() (time.Time, bool) {
	if s.written == nil || s.statusPeriod <= 0 {
		return time.Time{}, false
	}
	point := lastPoint(s.now, s.statusPeriod, s.statusPhase)
	if point.Before(s.written.Add(s.statusPeriod)) {
		return time.Time{}, false
	}
	return point, true
}

// lastPoint is the latest time offset + k·period not after now.
func lastPoint(now time.Time, period, offset time.Duration) time.Time {
	n, off, p := now.UnixNano(), int64(offset), int64(period)
	k := (n - off) / p
	if n-off < 0 && (n-off)%p != 0 {
		k--
	}
	return time.Unix(0, off+k*p)
}

// age is how long ago the data was last read successfully (0 before the
// first sync).
// untilStale is how long until the ExternalSecret turns stale; false when
// it never does or already is.
func (s schedule) untilStale() (time.Duration, bool) {
	if s.interval <= 0 || s.lastRead == nil {
		return 0, false
	}
	d := staleIntervals*s.interval - s.age()
	return d, d > 0
}

func (s schedule) age() time.Duration {
	if s.lastRead == nil {
		return 0
	}
	return s.now.Sub(*s.lastRead)
}

// stale tells whether the ExternalSecret has gone more than
// staleIntervals refresh intervals without a successful refresh. Without a
// periodic refresh (interval 0), or before a first sync, it never is.
func (s schedule) stale() bool {
	return s.interval > 0 && s.lastRead != nil && s.age() > staleIntervals*s.interval
}

// overdue tells whether an ExternalSecret whose data was last read at
// last missed a refresh (see overdueIntervals).
func overdue(now, last time.Time, interval time.Duration) bool {
	return interval > 0 && now.Sub(last) > overdueIntervals*interval
}
