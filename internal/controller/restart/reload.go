package restart

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/watchword-dev/watchword/internal/engine"
)

// Reloads: the workloads that opt in (the label) may also restart when a
// ConfigMap or a Secret that Watchword does not write changes, as
// Reloader does, under the same rules as a rotation. The annotations read
// as Reloader's do; Reloader's own names are honoured too, on a workload
// that carries the label (without it Watchword does not see the workload
// at all), so that moving a workload over is adding the label.
//
// Of such an object Watchword knows only what a change detection needs:
// its metadata (a watch of it by name, objwatch.go) and a digest of the
// keys the workload uses, recorded on the workload (DigestsAnnotation).
// Its first digest is the baseline; a different one later is a change,
// which is owed a restart as a rotation is.
const (
	// ReloadAutoAnnotation: "true" for every ConfigMap and Secret the pod
	// template references; "configmaps" or "secrets" for those of one
	// kind.
	ReloadAutoAnnotation = "watchword.io/reload-auto"
	// ReloadSecretsAnnotation names Secrets, separated by commas.
	ReloadSecretsAnnotation = "watchword.io/reload-secrets"
	// ReloadConfigMapsAnnotation names ConfigMaps, separated by commas.
	ReloadConfigMapsAnnotation = "watchword.io/reload-configmaps"
	// StrategyAnnotation says how a restart is made: "annotation" (the
	// default, RestartedAtAnnotation on the pod template) or "env"
	// (DigestEnv in every container of the pod template).
	StrategyAnnotation = "watchword.io/restart-strategy"
	// DigestsAnnotation records, per watched object, the digest of the
	// keys the workload uses, as `configmap/app=<hex>,secret/db=<hex>`.
	DigestsAnnotation = "watchword.io/reload-digests"
	// DigestEnv is the environment variable of the env strategy.
	DigestEnv = "WATCHWORD_RELOAD_DIGEST"
)

// Reloader's annotations, honoured on a workload that carries the label
// when Watchword's own for the same is absent.
const (
	reloaderAuto            = "reloader.stakater.com/auto"
	reloaderSecretAuto      = "secret.reloader.stakater.com/auto"
	reloaderConfigMapAuto   = "configmap.reloader.stakater.com/auto"
	reloaderSecretReload    = "secret.reloader.stakater.com/reload"
	reloaderConfigMapReload = "configmap.reloader.stakater.com/reload"
)

// Strategies of StrategyAnnotation.
const (
	StrategyAnnotationValue = "annotation"
	StrategyEnv             = "env"
)

// Object kinds of a reload.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// Object names a ConfigMap or a Secret a workload reloads for, in its
// namespace.
type Object struct{ Kind, Name string }

// Key is the object's name in the workload's record: `configmap/<name>`
// or `secret/<name>`, apart from the Secrets rotations name (a '/' is in
// no object name).
func (o Object) Key() string { return strings.ToLower(o.Kind) + "/" + o.Name }

// objectOf is the object a record key names; ok is false for a Secret
// that rotations name.
func objectOf(key string) (Object, bool) {
	kind, name, ok := strings.Cut(key, "/")
	switch {
	case !ok:
		return Object{}, false
	case kind == "configmap":
		return Object{KindConfigMap, name}, true
	default:
		return Object{KindSecret, name}, true
	}
}

// Reload is what a workload's reload annotations ask for.
type Reload struct {
	// Objects are the ConfigMaps and Secrets named or found, with how the
	// template uses them.
	Objects map[Object]Usage
}

// reloadValue is the value of Watchword's annotation, or else of
// Reloader's.
func reloadValue(ann map[string]string, ours string, reloaders ...string) string {
	if v, ok := ann[ours]; ok {
		return v
	}
	for _, r := range reloaders {
		if v, ok := ann[r]; ok {
			return v
		}
	}
	return ""
}

// HasReload tells whether the workload asks for reloads at all.
func HasReload(ann map[string]string) bool {
	for _, k := range []string{ReloadAutoAnnotation, ReloadSecretsAnnotation, ReloadConfigMapsAnnotation,
		reloaderAuto, reloaderSecretAuto, reloaderConfigMapAuto, reloaderSecretReload, reloaderConfigMapReload} {
		if _, ok := ann[k]; ok {
			return true
		}
	}
	return false
}

// Reloads tells which ConfigMaps and Secrets the workload reloads for,
// from its annotations (Watchword's, or Reloader's) and pod template. A
// named object the template does not reference is used whole. The error
// says what to write instead.
func Reloads(ann map[string]string, spec *corev1.PodSpec) (Reload, error) {
	out := Reload{Objects: map[Object]Usage{}}
	secrets, configMaps := TemplateSecrets(spec), TemplateConfigMaps(spec)
	auto := strings.TrimSpace(reloadValue(ann, ReloadAutoAnnotation, reloaderAuto))
	autoSecrets, autoConfigMaps := auto == "true", auto == "true"
	switch auto {
	case "", "true", "false":
	case "secrets":
		autoSecrets = true
	case "configmaps":
		autoConfigMaps = true
	default:
		return Reload{}, fmt.Errorf("%s is %q: write \"true\" (every ConfigMap and Secret the pod template references), \"secrets\" or \"configmaps\"", ReloadAutoAnnotation, auto)
	}
	if _, ours := ann[ReloadAutoAnnotation]; !ours {
		autoSecrets = autoSecrets || ann[reloaderSecretAuto] == "true"
		autoConfigMaps = autoConfigMaps || ann[reloaderConfigMapAuto] == "true"
	}
	add := func(kind string, refs map[string]*Usage, all bool, named, annotation string) error {
		if all {
			for name, u := range refs {
				out.Objects[Object{kind, name}] = *u
			}
		}
		for item := range strings.SplitSeq(named, ",") {
			item = strings.TrimSpace(item)
			switch {
			case item == "":
			case len(validation.IsDNS1123Subdomain(item)) > 0:
				return fmt.Errorf("%s names %q, which is not a %s name: write names separated by commas", annotation, item, kind)
			case refs[item] != nil:
				out.Objects[Object{kind, item}] = *refs[item]
			default:
				out.Objects[Object{kind, item}] = Usage{Whole: true}
			}
		}
		return nil
	}
	if err := add(KindSecret, secrets, autoSecrets, reloadValue(ann, ReloadSecretsAnnotation, reloaderSecretReload), ReloadSecretsAnnotation); err != nil {
		return Reload{}, err
	}
	if err := add(KindConfigMap, configMaps, autoConfigMaps, reloadValue(ann, ReloadConfigMapsAnnotation, reloaderConfigMapReload), ReloadConfigMapsAnnotation); err != nil {
		return Reload{}, err
	}
	return out, nil
}

// Strategy is the workload's restart strategy; the error says what to
// write instead, and the default is used meanwhile.
func Strategy(ann map[string]string) (string, error) {
	switch v := ann[StrategyAnnotation]; v {
	case "", StrategyAnnotationValue:
		return StrategyAnnotationValue, nil
	case StrategyEnv:
		return StrategyEnv, nil
	default:
		return StrategyAnnotationValue, fmt.Errorf("%s is %q: write %q or %q; %q is used meanwhile", StrategyAnnotation, v, StrategyAnnotationValue, StrategyEnv, StrategyAnnotationValue)
	}
}

// TemplateConfigMaps tells which ConfigMaps a pod template references and
// how: configMap volumes and projected sources (with or without items),
// and envFrom and env of every container and init container.
func TemplateConfigMaps(spec *corev1.PodSpec) map[string]*Usage {
	out := usages{}
	use, items := out.use, out.items
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name != "" {
			items(v.ConfigMap.Name, v.ConfigMap.Items)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil && src.ConfigMap.Name != "" {
					items(src.ConfigMap.Name, src.ConfigMap.Items)
				}
			}
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil && from.ConfigMapRef.Name != "" {
				use(from.ConfigMapRef.Name).Whole = true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name != "" {
				use(e.ValueFrom.ConfigMapKeyRef.Name).addKey(e.ValueFrom.ConfigMapKeyRef.Key)
			}
		}
	}
	return out
}

// absent is the digest of an object that does not exist.
const absent = "-"

// Digest is the digest of the keys of data that u uses (every key for a
// whole use), in each form keys accepts (engine.DigestKeys.Forms: the
// current key's first): an HMAC-SHA256 under the installation's digest
// key over the sorted keys and their values, each framed by its length,
// so that whoever may read the workload cannot test guesses of a value
// against it. A key the object lacks counts as absent, so that its
// arrival is a change. The values are read and dropped; only the digests
// are kept, joined by formSep.
func Digest(keys *engine.DigestKeys, data map[string][]byte, u Usage) string {
	names := slices.Sorted(maps.Keys(data))
	if !u.Whole {
		names = slices.Sorted(maps.Keys(u.Keys))
	}
	fill := func(d *engine.Digest) {
		d.Add("watchword-reload-v1")
		for _, k := range names {
			if v, ok := data[k]; ok {
				d.Add("key", k, string(v))
			} else {
				d.Add("absent", k)
			}
		}
	}
	return strings.Join(keys.Forms(fill), formSep)
}

// formSep joins the forms of a digest in memory; only the first, the
// current form, is recorded on the workload.
const formSep = " "

// currentForm is the form of a digest that is recorded.
func currentForm(d string) string {
	first, _, _ := strings.Cut(d, formSep)
	return first
}

// sameDigest tells whether a recorded digest is one of the forms of d:
// recorded under the current key, the previous one, or none.
func sameDigest(recorded, d string) bool {
	return slices.Contains(strings.Split(d, formSep), recorded)
}

// usageKey names a usage, to cache digests by it.
func usageKey(u Usage) string {
	if u.Whole {
		return "*"
	}
	return strings.Join(slices.Sorted(maps.Keys(u.Keys)), "\x00")
}

// encodeDigests is the value of DigestsAnnotation.
func encodeDigests(d map[string]string) string {
	parts := make([]string, 0, len(d))
	for _, k := range slices.Sorted(maps.Keys(d)) {
		parts = append(parts, k+"="+d[k])
	}
	return strings.Join(parts, ",")
}

// decodeDigests reads DigestsAnnotation; an entry that does not parse is
// dropped, and its object is taken as the baseline again.
func decodeDigests(v string) map[string]string {
	out := map[string]string{}
	for entry := range strings.SplitSeq(v, ",") {
		if k, d, ok := strings.Cut(entry, "="); ok && d != "" {
			out[k] = d
		}
	}
	return out
}

// Changes compares the digests of the watched objects now (cur, by record
// key) with the recorded ones: an object whose recorded digest differs is
// a change at now, as a rotation of any key it uses (the digest covers
// only those); one without a record is the baseline. An object deleted
// since is no change (the pods running have read it, and new ones could
// not start): its recorded digest is kept, so that it is a change when it
// comes back different. next are the digests to record.
func Changes(now time.Time, cur, recorded map[string]string) (changes []Rotation, next map[string]string) {
	if len(cur) == 0 {
		return nil, nil
	}
	next = make(map[string]string, len(cur))
	for _, key := range slices.Sorted(maps.Keys(cur)) {
		prev, ok := recorded[key]
		next[key] = currentForm(cur[key])
		switch {
		case !ok:
		case cur[key] == absent:
			next[key] = prev
		case !sameDigest(prev, cur[key]):
			changes = append(changes, Rotation{Secret: key, At: now})
		}
	}
	return changes, next
}

// owedName names what a restart is owed for, by record key, for a
// person: the rotation of a Secret and its keys, or the change of a
// watched object (whose keys are not told apart: its digest covers the
// keys in use).
func owedName(key string, owed Owed) string {
	if o, ok := objectOf(key); ok {
		return fmt.Sprintf("change of %s %q (keys in use)", o.Kind, o.Name)
	}
	return fmt.Sprintf("rotation of Secret %q (keys: %s)", key, keyText(owed.Keys))
}
