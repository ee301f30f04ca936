package restart

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/watchword-dev/watchword/internal/engine"
)

func podWith(opts ...func(*corev1.PodSpec)) *corev1.PodSpec {
	p := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func cmKey(name, key string) func(*corev1.PodSpec) {
	return func(p *corev1.PodSpec) {
		p.Containers[0].Env = append(p.Containers[0].Env, corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}})
	}
}

func secretWhole(name string) func(*corev1.PodSpec) {
	return func(p *corev1.PodSpec) {
		p.Volumes = append(p.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}})
	}
}

func TestReloads(t *testing.T) {
	pod := podWith(cmKey("settings", "mode"), secretWhole("token"))
	cases := []struct {
		name    string
		ann     map[string]string
		want    map[Object]Usage
		wantErr bool
	}{
		{"reloader auto", map[string]string{reloaderAuto: "true"},
			map[Object]Usage{{KindConfigMap, "settings"}: {Keys: map[string]bool{"mode": true}}, {KindSecret, "token"}: {Whole: true}}, false},
		{"watchword auto secrets only", map[string]string{ReloadAutoAnnotation: "secrets"},
			map[Object]Usage{{KindSecret, "token"}: {Whole: true}}, false},
		{"watchword's name wins over reloader's", map[string]string{ReloadAutoAnnotation: "false", reloaderAuto: "true"}, map[Object]Usage{}, false},
		{"reloader's typed auto", map[string]string{reloaderConfigMapAuto: "true"},
			map[Object]Usage{{KindConfigMap, "settings"}: {Keys: map[string]bool{"mode": true}}}, false},
		{"named, one not referenced", map[string]string{reloaderConfigMapReload: "settings, other"},
			map[Object]Usage{{KindConfigMap, "settings"}: {Keys: map[string]bool{"mode": true}}, {KindConfigMap, "other"}: {Whole: true}}, false},
		{"named secrets", map[string]string{ReloadSecretsAnnotation: "token"}, map[Object]Usage{{KindSecret, "token"}: {Whole: true}}, false},
		{"bad auto", map[string]string{ReloadAutoAnnotation: "yes"}, nil, true},
		{"bad name", map[string]string{ReloadConfigMapsAnnotation: "Not_A_Name"}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Reloads(c.ann, pod)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want error %v", err, c.wantErr)
			}
			if c.wantErr {
				return
			}
			if len(got.Objects) != len(c.want) {
				t.Fatalf("got %v, want %v", got.Objects, c.want)
			}
			for o, u := range c.want {
				g, ok := got.Objects[o]
				if !ok || g.Whole != u.Whole || len(g.Keys) != len(u.Keys) {
					t.Fatalf("%v: got %+v, want %+v", o, g, u)
				}
				for k := range u.Keys {
					if !g.Keys[k] {
						t.Fatalf("%v: key %s missing", o, k)
					}
				}
			}
		})
	}
}

func TestDigestCoversOnlyTheKeysInUse(t *testing.T) {
	keys := &engine.DigestKeys{}
	keys.Set(engine.NewDigestKey([]byte("0123456789abcdef0123456789abcdef")), nil)
	used := Usage{Keys: map[string]bool{"mode": true}}
	a := Digest(keys, map[string][]byte{"mode": []byte("blue"), "other": []byte("1")}, used)
	if b := Digest(keys, map[string][]byte{"mode": []byte("blue"), "other": []byte("2")}, used); a != b {
		t.Error("a change of a key not in use changed the digest")
	}
	if b := Digest(keys, map[string][]byte{"mode": []byte("green"), "other": []byte("1")}, used); a == b {
		t.Error("a change of the key in use left the digest")
	}
	if b := Digest(keys, map[string][]byte{"other": []byte("1")}, used); a == b {
		t.Error("the key in use removed left the digest")
	}
	whole := Usage{Whole: true}
	if Digest(keys, map[string][]byte{"a": []byte("1")}, whole) == Digest(keys, map[string][]byte{"a": []byte("1"), "b": nil}, whole) {
		t.Error("a key added to a whole use left the digest")
	}
	// Framing: moving bytes between key and value is a change.
	if Digest(keys, map[string][]byte{"ab": []byte("c")}, whole) == Digest(keys, map[string][]byte{"a": []byte("bc")}, whole) {
		t.Error("key and value are not framed")
	}
}

// TestReloadDigestsAreKeyedAndSurviveARotation: the digest recorded on a
// workload is an HMAC under the installation's key, not a SHA-256 of the
// value anyone may recompute; a rotation of the key, or the first key
// after plain digests, is no change (nothing restarts), and the digest
// is recorded again in the current form.
func TestReloadDigestsAreKeyedAndSurviveARotation(t *testing.T) {
	data := map[string][]byte{"password": []byte("hunter2")}
	used := Usage{Keys: map[string]bool{"password": true}}
	keys := &engine.DigestKeys{}
	plain := Digest(keys, data, used)
	if !strings.HasPrefix(plain, "sha256:") || strings.Contains(plain, " ") {
		t.Fatalf("without a key: %q", plain)
	}
	first := engine.NewDigestKey([]byte("0123456789abcdef0123456789abcdef"))
	keys.Set(first, nil)
	d := Digest(keys, data, used)
	rec := currentForm(d)
	if !strings.HasPrefix(rec, "hmac-sha256:"+first.ID+":") {
		t.Fatalf("recorded form %q, want an HMAC under the key", rec)
	}
	now := time.Now()
	// From plain to keyed: no change, recorded anew.
	changes, next := Changes(now, map[string]string{"secret/db": d}, map[string]string{"secret/db": plain})
	if len(changes) != 0 || next["secret/db"] != rec {
		t.Fatalf("the first key: changes %v, next %v", changes, next)
	}
	// A rotation: no change.
	second := engine.NewDigestKey([]byte("fedcba9876543210fedcba9876543210"))
	keys.Set(second, &first)
	d2 := Digest(keys, data, used)
	changes, next = Changes(now, map[string]string{"secret/db": d2}, map[string]string{"secret/db": rec})
	if len(changes) != 0 || !strings.Contains(next["secret/db"], second.ID) {
		t.Fatalf("a rotation: changes %v, next %v", changes, next)
	}
	// A new value under the new key is a change.
	d3 := Digest(keys, map[string][]byte{"password": []byte("hunter3")}, used)
	if changes, _ = Changes(now, map[string]string{"secret/db": d3}, next); len(changes) != 1 {
		t.Fatalf("a new value after the rotation: changes %v", changes)
	}
}

func TestChanges(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	recorded := map[string]string{"configmap/a": "1", "secret/b": "2", "configmap/gone": "3"}
	cur := map[string]string{"configmap/a": "1", "secret/b": "9", "configmap/gone": absent, "configmap/new": "4"}
	changes, next := Changes(now, cur, recorded)
	if len(changes) != 1 || changes[0].Secret != "secret/b" || !changes[0].At.Equal(now) || changes[0].Keys != nil {
		t.Fatalf("changes %+v, want one of secret/b at now, any key", changes)
	}
	want := map[string]string{"configmap/a": "1", "secret/b": "9", "configmap/gone": "3", "configmap/new": "4"}
	for k, v := range want {
		if next[k] != v {
			t.Errorf("next[%s] = %q, want %q", k, next[k], v)
		}
	}
	// An object absent at the first sight, then created, is a change.
	changes, _ = Changes(now, map[string]string{"configmap/late": "5"}, map[string]string{"configmap/late": absent})
	if len(changes) != 1 {
		t.Errorf("a creation after an absent baseline made %d changes, want 1", len(changes))
	}
}

// A change of a watched object goes through Decide as a rotation does:
// the first sight is the baseline; a change is owed a restart after the
// debounce.
func TestDecideWithAChange(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	used := map[string]Usage{"configmap/a": {Whole: true}}
	changes, digests := Changes(t0, map[string]string{"configmap/a": "1"}, nil)
	plan := Decide(t0, used, State{}, changes, time.Second).withDigests(digests)
	if plan.Restart || len(plan.Next.Pending) != 0 || !plan.Changed {
		t.Fatalf("the baseline: %+v", plan)
	}
	st := plan.Next
	t1 := t0.Add(time.Minute)
	changes, digests = Changes(t1, map[string]string{"configmap/a": "2"}, st.Digests)
	plan = Decide(t1, used, st, changes, time.Second).withDigests(digests)
	if plan.Restart || len(plan.Next.Pending) != 1 || plan.Next.Digests["configmap/a"] != "2" {
		t.Fatalf("the change: %+v", plan)
	}
	st = plan.Next
	t2 := t1.Add(2 * time.Second)
	changes, digests = Changes(t2, map[string]string{"configmap/a": "2"}, st.Digests)
	plan = Decide(t2, used, st, changes, time.Second).withDigests(digests)
	if !plan.Restart {
		t.Fatalf("after the debounce: %+v", plan)
	}
	seen, pending, _ := plan.Next.Restarted().Encode()
	if pending != "" || seen == "" || plan.Next.Restarted().Digests["configmap/a"] != "2" {
		t.Fatalf("after the restart: seen %q pending %q", seen, pending)
	}
	// Encoded and decoded, the digests survive.
	ann := map[string]string{ForAnnotation: seen, DigestsAnnotation: encodeDigests(plan.Next.Digests)}
	if got := DecodeState(ann).Digests["configmap/a"]; got != "2" {
		t.Fatalf("decoded digest %q", got)
	}
}

// A restart of the env strategy whose value every container holds
// already would change no pod: it is told apart, and the plan settles
// what it owes without a restart.
func TestEnvStrategyKnowsARestartThatChangesNothing(t *testing.T) {
	dep := &appsv1.Deployment{}
	dep.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "app", Env: []corev1.EnvVar{{Name: DigestEnv, Value: "d1"}}},
		{Name: "side", Env: []corev1.EnvVar{{Name: "X", Value: "y"}, {Name: DigestEnv, Value: "d1"}}},
	}
	if !templateHasDigest(dep, "d1") {
		t.Error("every container holds d1, yet a restart would change the template")
	}
	if templateHasDigest(dep, "d2") {
		t.Error("a new digest taken as the one the template holds")
	}
	dep.Spec.Template.Spec.Containers[1].Env = dep.Spec.Template.Spec.Containers[1].Env[:1]
	if templateHasDigest(dep, "d1") {
		t.Error("a container without the variable taken as holding it")
	}
	p := Plan{Restart: true, Next: State{Pending: map[string]Owed{"configmap/x": {At: time.Now()}}}}
	if s := p.settled(); s.Restart || !s.Changed || len(s.Next.Pending) != 0 {
		t.Errorf("settled plan %+v, want nothing owed, recorded, no restart", s)
	}
}
