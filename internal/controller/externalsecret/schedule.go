package externalsecret

import (
	"hash/fnv"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// defaultRefresh applies when spec.refreshInterval is unset.
const defaultRefresh = time.Hour

func refreshInterval(es *v1alpha1.ExternalSecret) time.Duration {
	if es.Spec.RefreshInterval == nil {
		return defaultRefresh
	}
	return es.Spec.RefreshInterval.Duration
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
