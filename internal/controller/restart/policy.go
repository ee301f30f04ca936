package restart

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The label and annotations of an opted-in workload.
const (
	// Label opts a workload in; only workloads that carry it are cached.
	Label = "watchword.io/restart"
	// LabelValue is the value of Label.
	LabelValue = "true"
	// OnAnnotation names the Secrets the workload consumes, separated by
	// commas, or "auto" for every Secret its pod template references.
	OnAnnotation = "watchword.io/restart-on"
	// DebounceAnnotation is the window in which rotations coalesce into
	// one restart, a Go duration such as 10s.
	DebounceAnnotation = "watchword.io/restart-debounce"
	// ClassAnnotation names the controller class that restarts the
	// workload; without it, the instance of the default class does.
	ClassAnnotation = "watchword.io/restart-class"
	// ForAnnotation records, per consumed Secret, the last rotation
	// Watchword has acted on: restarted for, judged to concern keys the
	// workload does not use, or taken as the baseline.
	ForAnnotation = "watchword.io/restarted-for"
	// PendingAnnotation records the rotations a restart is owed for while
	// the debounce window runs or the restart is held.
	PendingAnnotation = "watchword.io/restart-pending"
	// HeldAnnotation records the reasons of the owed restart's hold that
	// have been announced (held.go), so that each is announced once per
	// hold, by this instance or by the next one after a restart of
	// Watchword; it goes with the owed restart.
	HeldAnnotation = "watchword.io/restart-held"
	// RestartedAtAnnotation on the pod template is the one
	// `kubectl rollout restart` sets.
	RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"
)

// Auto is the value of OnAnnotation for every Secret the pod template
// references.
const Auto = "auto"

// DefaultDebounce is the debounce window without DebounceAnnotation.
const DefaultDebounce = 30 * time.Second

// maxPendingKeys bounds the keys recorded for one Secret in
// PendingAnnotation; beyond it the record says every key.
const maxPendingKeys = 32

// Usage is how a workload consumes one Secret: whole (envFrom, a volume
// without items, an image pull secret, a name in OnAnnotation that the
// template does not reference) or only some keys.
type Usage struct {
	Whole bool
	Keys  map[string]bool
}

func (u *Usage) addKey(k string) {
	if u.Keys == nil {
		u.Keys = map[string]bool{}
	}
	u.Keys[k] = true
}

// uses tells whether a rotation of keys concerns the consumer; no keys
// means any key.
func (u Usage) uses(keys []string) bool {
	if u.Whole || len(keys) == 0 {
		return true
	}
	return slices.ContainsFunc(keys, func(k string) bool { return u.Keys[k] })
}

// relevant are the rotated keys the consumer uses; nil means every key.
func (u Usage) relevant(keys []string) []string {
	if u.Whole || len(keys) == 0 {
		return keys
	}
	var out []string
	for _, k := range keys {
		if u.Keys[k] {
			out = append(out, k)
		}
	}
	return out
}

// usages collects, by name, how a pod template uses the objects of one
// kind (TemplateSecrets, TemplateConfigMaps).
type usages map[string]*Usage

// use is name's usage, made on first use.
func (m usages) use(name string) *Usage {
	if m[name] == nil {
		m[name] = &Usage{}
	}
	return m[name]
}

// items records a volume or projected source of name: the keys it lists,
// or the whole object when it lists none.
func (m usages) items(name string, items []corev1.KeyToPath) {
	u := m.use(name)
	if len(items) == 0 {
		u.Whole = true
	}
	for _, it := range items {
		u.addKey(it.Key)
	}
}

// TemplateSecrets tells which Secrets a pod template references and how:
// volumes (secret and projected sources, with or without items), envFrom
// and env of every container and init container, and image pull secrets.
func TemplateSecrets(spec *corev1.PodSpec) map[string]*Usage {
	out := usages{}
	use, items := out.use, out.items
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName != "" {
			items(v.Secret.SecretName, v.Secret.Items)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil && src.Secret.Name != "" {
					items(src.Secret.Name, src.Secret.Items)
				}
			}
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, from := range c.EnvFrom {
			if from.SecretRef != nil && from.SecretRef.Name != "" {
				use(from.SecretRef.Name).Whole = true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "" {
				use(e.ValueFrom.SecretKeyRef.Name).addKey(e.ValueFrom.SecretKeyRef.Key)
			}
		}
	}
	for _, p := range spec.ImagePullSecrets {
		if p.Name != "" {
			use(p.Name).Whole = true
		}
	}
	return out
}

// Consumed tells which Secrets a workload restarts for, from the value of
// OnAnnotation and its pod template: "auto" stands for every Secret the
// template references; a named Secret the template references is used as
// the template uses it, and one it does not as a whole. The error says
// what to write instead.
func Consumed(on string, spec *corev1.PodSpec) (map[string]Usage, error) {
	refs := TemplateSecrets(spec)
	out := map[string]Usage{}
	named := 0
	for item := range strings.SplitSeq(on, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			continue
		case item == Auto:
			for name, u := range refs {
				out[name] = *u
			}
		case len(validation.IsDNS1123Subdomain(item)) > 0:
			return nil, fmt.Errorf("%s names %q, which is not a Secret name: write Secret names separated by commas, or %q", OnAnnotation, item, Auto)
		case refs[item] != nil:
			out[item] = *refs[item]
		default:
			out[item] = Usage{Whole: true}
		}
		named++
	}
	if named == 0 {
		return nil, fmt.Errorf("%s names no Secret: write Secret names separated by commas, such as \"db-creds,api-key\", or %q", OnAnnotation, Auto)
	}
	return out, nil
}

// Debounce is the window of DebounceAnnotation; an empty value is the
// default. The error says what to write instead.
func Debounce(value string) (time.Duration, error) {
	if value == "" {
		return DefaultDebounce, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 {
		return DefaultDebounce, fmt.Errorf("%s %q is not a duration: write a Go duration such as \"10s\" or \"2m\"; %s is used meanwhile", DebounceAnnotation, value, DefaultDebounce)
	}
	return d, nil
}

// Rotation is the last rotation of one ExternalSecret writing Secret, from
// its status: when, and which keys it changed (none means any key).
type Rotation struct {
	Secret string
	At     time.Time
	Keys   []string
}

// Owed is a restart a workload owes for a Secret: the latest relevant
// rotation and the keys it changed that the workload uses (none: any).
type Owed struct {
	At   time.Time
	Keys []string
}

// State is what a workload's annotations record.
type State struct {
	// Seen maps each consumed Secret to the last rotation acted on; the
	// zero time means none yet. Nil when the workload was never seen.
	Seen map[string]time.Time
	// Pending maps Secrets to the restart owed for them.
	Pending map[string]Owed
	// Held are the reasons of the owed restart's hold already announced,
	// sorted; none once nothing is owed.
	Held []string
	// Digests are the digests of the watched objects (reload.go), by
	// record key.
	Digests map[string]string
}

// Plan is what to do with a workload now.
type Plan struct {
	// Next is the state to record; Changed tells whether it differs from
	// the recorded one.
	Next    State
	Changed bool
	// Restart: the debounce window of the owed restart is over.
	Restart bool
	// DueAt is when an owed restart is due, if one is owed.
	DueAt time.Time
}

// Decide tells what a workload that consumes used, with the recorded state
// st, does about the rotations rots at now. A workload seen for the first
// time, and a Secret it had not consumed before, are taken as the
// baseline: their current rotation is recorded, without a restart. A
// rotation that changed only keys the workload does not use is recorded
// without a restart. The others are owed a restart, due when debounce has
// passed since the latest of them.
func Decide(now time.Time, used map[string]Usage, st State, rots []Rotation, debounce time.Duration) Plan {
	latest := map[string]time.Time{}
	for _, r := range rots {
		if r.At.After(latest[r.Secret]) {
			latest[r.Secret] = r.At
		}
	}
	next := State{Seen: map[string]time.Time{}, Pending: map[string]Owed{}, Digests: st.Digests}
	for name, u := range used {
		cur := latest[name]
		prev, known := st.Seen[name]
		if owed, ok := st.Pending[name]; ok {
			next.Pending[name] = owed
		}
		if !known || !cur.After(prev) {
			next.Seen[name] = later(prev, cur, known)
			continue
		}
		next.Seen[name] = cur
		var keys []string
		anyKey := false
		for _, r := range rots {
			if r.Secret != name || !r.At.After(prev) {
				continue
			}
			anyKey = anyKey || len(r.Keys) == 0
			keys = append(keys, r.Keys...)
		}
		if anyKey {
			keys = nil
		}
		if !u.uses(keys) {
			continue
		}
		next.Pending[name] = merge(next.Pending[name], cur, u.relevant(keys))
	}
	if len(next.Pending) > 0 {
		// The hold of an owed restart lasts until it is made, whatever
		// rotations add to it meanwhile.
		next.Held = st.Held
	}
	plan := Plan{Next: next, Changed: !equalState(st, next)}
	for _, owed := range next.Pending {
		if due := owed.At.Add(debounce); due.After(plan.DueAt) {
			plan.DueAt = due
		}
	}
	plan.Restart = len(next.Pending) > 0 && !now.Before(plan.DueAt)
	return plan
}

// later is the record of a Secret whose rotation is not newer: the
// current one for a Secret not seen before, the recorded one otherwise.
func later(prev, cur time.Time, known bool) time.Time {
	if !known {
		return cur
	}
	return prev
}

// merge adds a rotation at `at` of keys to what is owed; no keys means
// any key, and so does more than maxPendingKeys.
func merge(owed Owed, at time.Time, keys []string) Owed {
	wasAny := !owed.At.IsZero() && len(owed.Keys) == 0
	if at.After(owed.At) {
		owed.At = at
	}
	if wasAny || len(keys) == 0 {
		owed.Keys = nil
		return owed
	}
	set := map[string]bool{}
	for _, k := range slices.Concat(owed.Keys, keys) {
		set[k] = true
	}
	owed.Keys = slices.Sorted(maps.Keys(set))
	if len(owed.Keys) > maxPendingKeys {
		owed.Keys = nil
	}
	return owed
}

// Restarted is the state after the owed restart: nothing pending, nor
// held.
func (s State) Restarted() State {
	return State{Seen: s.Seen, Pending: map[string]Owed{}, Digests: s.Digests}
}

func equalState(a, b State) bool {
	if (a.Seen == nil) != (b.Seen == nil) {
		return false
	}
	return maps.EqualFunc(a.Seen, b.Seen, time.Time.Equal) &&
		maps.EqualFunc(a.Pending, b.Pending, func(x, y Owed) bool { return x.At.Equal(y.At) && slices.Equal(x.Keys, y.Keys) }) &&
		slices.Equal(a.Held, b.Held) && maps.Equal(a.Digests, b.Digests)
}

// stamp is the form of a rotation time in the annotations: RFC 3339 in
// UTC, the resolution of status.lastRotationTime; "" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func parseStamp(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, s)
}

// Encode gives the values of ForAnnotation, PendingAnnotation and
// HeldAnnotation: `db-creds=2026-11-23T11:00:00Z,api-key=` (an empty time:
// no rotation yet), `db-creds=2026-11-23T11:00:00Z/password+user` (`/*`:
// any key) and `MaintenanceWindow,RolloutInProgress`; the latter two are
// empty when nothing is owed.
func (s State) Encode() (seen, pending, held string) {
	var a, b []string
	for _, name := range slices.Sorted(maps.Keys(s.Seen)) {
		a = append(a, name+"="+stamp(s.Seen[name]))
	}
	for _, name := range slices.Sorted(maps.Keys(s.Pending)) {
		keys := "*"
		if owed := s.Pending[name]; len(owed.Keys) > 0 {
			keys = strings.Join(owed.Keys, "+")
		}
		b = append(b, name+"="+stamp(s.Pending[name].At)+"/"+keys)
	}
	return strings.Join(a, ","), strings.Join(b, ","), strings.Join(s.Held, ",")
}

// DecodeState reads the annotations. A workload without ForAnnotation was
// never seen (nil Seen). A value that does not parse, as when someone
// edited it, counts as never seen too: the workload is taken as the
// baseline again rather than restarted for rotations it may have had.
func DecodeState(annotations map[string]string) State {
	seenText, ok := annotations[ForAnnotation]
	if !ok {
		return State{}
	}
	st := State{Seen: map[string]time.Time{}, Pending: map[string]Owed{}}
	for entry := range strings.SplitSeq(seenText, ",") {
		if entry == "" {
			continue
		}
		name, at, ok := strings.Cut(entry, "=")
		t, err := parseStamp(at)
		if !ok || err != nil {
			return State{}
		}
		st.Seen[name] = t
	}
	for entry := range strings.SplitSeq(annotations[PendingAnnotation], ",") {
		if entry == "" {
			continue
		}
		name, rest, ok := strings.Cut(entry, "=")
		at, keys, ok2 := strings.Cut(rest, "/")
		t, err := parseStamp(at)
		if !ok || !ok2 || err != nil || t.IsZero() {
			return State{}
		}
		owed := Owed{At: t}
		if keys != "*" {
			owed.Keys = strings.Split(keys, "+")
			sort.Strings(owed.Keys)
		}
		st.Pending[name] = owed
	}
	if d := decodeDigests(annotations[DigestsAnnotation]); len(d) > 0 {
		st.Digests = d
	}
	if len(st.Pending) > 0 {
		for reason := range strings.SplitSeq(annotations[HeldAnnotation], ",") {
			st.Held = announced(st.Held, strings.TrimSpace(reason))
		}
	}
	return st
}
