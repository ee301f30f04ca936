package restart

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func podSpec() *corev1.PodSpec {
	return &corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "whole", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-whole"}}},
			{Name: "items", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-items",
				Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}}}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-items"},
					Items: []corev1.KeyToPath{{Key: "token", Path: "t"}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-whole"}}},
			}}}},
		},
		InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-from"}}}}}},
		Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "env-key"}, Key: "a"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "env-key"}, Key: "b"}}},
			{Name: "PLAIN", Value: "x"},
		}}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
	}
}

func describe(m map[string]Usage) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		u := m[name]
		if u.Whole {
			parts = append(parts, name+":*")
			continue
		}
		parts = append(parts, name+":"+strings.Join(slices.Sorted(maps.Keys(u.Keys)), "+"))
	}
	return strings.Join(parts, " ")
}

func TestConsumed(t *testing.T) {
	cases := []struct {
		name, on, want, err string
	}{
		{"auto finds every reference", "auto",
			"env-from:* env-key:a+b proj-items:token proj-whole:* pull:* vol-items:tls.crt vol-whole:*", ""},
		{"a named Secret the template uses is used as it uses it", "env-key, vol-items", "env-key:a+b vol-items:tls.crt", ""},
		{"a named Secret the template does not reference is used whole", "read-by-api", "read-by-api:*", ""},
		{"auto and a name", "auto,other", "env-from:* env-key:a+b other:* proj-items:token proj-whole:* pull:* vol-items:tls.crt vol-whole:*", ""},
		{"nothing named", " , ", "", "names no Secret"},
		{"empty", "", "", "names no Secret"},
		{"not a name", "db_creds", "", `names "db_creds", which is not a Secret name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Consumed(c.on, podSpec())
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), OnAnnotation) {
					t.Fatalf("Consumed(%q) error %v, want one naming %s with %q", c.on, err, OnAnnotation, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := describe(got); d != c.want {
				t.Errorf("Consumed(%q) = %s, want %s", c.on, d, c.want)
			}
		})
	}
}

func TestDebounce(t *testing.T) {
	if d, err := Debounce(""); err != nil || d != DefaultDebounce {
		t.Errorf("Debounce(\"\") = %v, %v", d, err)
	}
	if d, err := Debounce("10s"); err != nil || d != 10*time.Second {
		t.Errorf("Debounce(10s) = %v, %v", d, err)
	}
	for _, bad := range []string{"ten seconds", "10", "-1s"} {
		d, err := Debounce(bad)
		if err == nil || d != DefaultDebounce || !strings.Contains(err.Error(), DebounceAnnotation) || !strings.Contains(err.Error(), `"10s"`) {
			t.Errorf("Debounce(%q) = %v, %v; want the default and an error saying what to write", bad, d, err)
		}
	}
}

func seen(pairs ...any) State {
	st := State{Seen: map[string]time.Time{}, Pending: map[string]Owed{}}
	for i := 0; i < len(pairs); i += 2 {
		st.Seen[pairs[i].(string)] = pairs[i+1].(time.Time)
	}
	return st
}

func whole() Usage { return Usage{Whole: true} }

func keys(ks ...string) Usage {
	u := Usage{}
	for _, k := range ks {
		u.addKey(k)
	}
	return u
}

func TestDecide(t *testing.T) {
	const window = 30 * time.Second
	cases := []struct {
		name    string
		now     time.Time
		used    map[string]Usage
		st      State
		rots    []Rotation
		restart bool
		pending string // the encoded pending state after the plan
		seen    string // the encoded seen state after the plan
		changed bool
	}{
		{name: "a workload seen for the first time is the baseline",
			now: at(100), used: map[string]Usage{"db": whole(), "api": whole()}, st: State{},
			rots: []Rotation{{Secret: "db", At: at(50), Keys: []string{"p"}}},
			seen: "api=,db=2026-11-23T11:00:50Z", changed: true},
		{name: "nothing new",
			now: at(100), used: map[string]Usage{"db": whole()}, st: seen("db", at(50)),
			rots: []Rotation{{Secret: "db", At: at(50)}},
			seen: "db=2026-11-23T11:00:50Z"},
		{name: "a Secret newly consumed is the baseline",
			now: at(100), used: map[string]Usage{"db": whole(), "new": whole()}, st: seen("db", at(50)),
			rots: []Rotation{{Secret: "new", At: at(90)}},
			seen: "db=2026-11-23T11:00:50Z,new=2026-11-23T11:01:30Z", changed: true},
		{name: "a rotation within the window is owed, not yet due",
			now: at(60), used: map[string]Usage{"db": whole()}, st: seen("db", at(0)),
			rots: []Rotation{{Secret: "db", At: at(50), Keys: []string{"p"}}},
			seen: "db=2026-11-23T11:00:50Z", pending: "db=2026-11-23T11:00:50Z/p", changed: true},
		{name: "the first rotation of a Secret that had none",
			now: at(100), used: map[string]Usage{"db": whole()}, st: seen("db", time.Time{}),
			rots:    []Rotation{{Secret: "db", At: at(50), Keys: []string{"p"}}},
			restart: true, seen: "db=2026-11-23T11:00:50Z", pending: "db=2026-11-23T11:00:50Z/p", changed: true},
		{name: "a later rotation moves the due time",
			now: at(81), used: map[string]Usage{"db": whole(), "api": whole()},
			st:   State{Seen: map[string]time.Time{"db": at(50), "api": at(0)}, Pending: map[string]Owed{"db": {At: at(50), Keys: []string{"p"}}}},
			rots: []Rotation{{Secret: "db", At: at(50)}, {Secret: "api", At: at(60), Keys: []string{"k"}}},
			seen: "api=2026-11-23T11:01:00Z,db=2026-11-23T11:00:50Z", pending: "api=2026-11-23T11:01:00Z/k,db=2026-11-23T11:00:50Z/p",
			changed: true},
		{name: "a burst coalesces: the window runs from the latest",
			now: at(91), used: map[string]Usage{"db": whole(), "api": whole()},
			st: State{Seen: map[string]time.Time{"db": at(50), "api": at(60)}, Pending: map[string]Owed{
				"db": {At: at(50), Keys: []string{"p"}}, "api": {At: at(60), Keys: []string{"k"}}}},
			rots:    []Rotation{{Secret: "db", At: at(50)}, {Secret: "api", At: at(60), Keys: []string{"k"}}},
			restart: true, seen: "api=2026-11-23T11:01:00Z,db=2026-11-23T11:00:50Z", pending: "api=2026-11-23T11:01:00Z/k,db=2026-11-23T11:00:50Z/p"},
		{name: "a rotation of keys the workload does not use is recorded without a restart",
			now: at(100), used: map[string]Usage{"db": keys("a")}, st: seen("db", at(0)),
			rots: []Rotation{{Secret: "db", At: at(50), Keys: []string{"b"}}},
			seen: "db=2026-11-23T11:00:50Z", changed: true},
		{name: "a rotation of a key it uses is owed, with that key only",
			now: at(100), used: map[string]Usage{"db": keys("a")}, st: seen("db", at(0)),
			rots:    []Rotation{{Secret: "db", At: at(50), Keys: []string{"a", "b"}}},
			restart: true, seen: "db=2026-11-23T11:00:50Z", pending: "db=2026-11-23T11:00:50Z/a", changed: true},
		{name: "a rotation whose keys are unknown concerns every consumer",
			now: at(100), used: map[string]Usage{"db": keys("a")}, st: seen("db", at(0)),
			rots:    []Rotation{{Secret: "db", At: at(50)}},
			restart: true, seen: "db=2026-11-23T11:00:50Z", pending: "db=2026-11-23T11:00:50Z/*", changed: true},
		{name: "an owed restart survives a later rotation of keys not used",
			now: at(70), used: map[string]Usage{"db": keys("a")},
			st:   State{Seen: map[string]time.Time{"db": at(50)}, Pending: map[string]Owed{"db": {At: at(50), Keys: []string{"a"}}}},
			rots: []Rotation{{Secret: "db", At: at(60), Keys: []string{"b"}}},
			seen: "db=2026-11-23T11:01:00Z", pending: "db=2026-11-23T11:00:50Z/a", changed: true},
		{name: "several ExternalSecrets writing one Secret",
			now: at(200), used: map[string]Usage{"db": keys("a", "c")}, st: seen("db", at(40)),
			rots: []Rotation{{Secret: "db", At: at(30), Keys: []string{"a"}}, {Secret: "db", At: at(50), Keys: []string{"c"}},
				{Secret: "db", At: at(60), Keys: []string{"b"}}},
			restart: true, seen: "db=2026-11-23T11:01:00Z", pending: "db=2026-11-23T11:01:00Z/c", changed: true},
		{name: "a Secret no longer consumed is forgotten",
			now: at(100), used: map[string]Usage{"db": whole()},
			st:   State{Seen: map[string]time.Time{"db": at(0), "gone": at(0)}, Pending: map[string]Owed{"gone": {At: at(1)}}},
			seen: "db=2026-11-23T11:00:00Z", changed: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := Decide(c.now, c.used, c.st, c.rots, window)
			s, p, _ := plan.Next.Encode()
			if plan.Restart != c.restart || s != c.seen || p != c.pending || plan.Changed != c.changed {
				t.Errorf("restart %v, seen %q, pending %q, changed %v\nwant restart %v, seen %q, pending %q, changed %v",
					plan.Restart, s, p, plan.Changed, c.restart, c.seen, c.pending, c.changed)
			}
		})
	}
}

// TestStateRoundTrips: what a workload's annotations record reads back
// the same, so that the operator's restart changes nothing.
func TestStateRoundTrips(t *testing.T) {
	st := State{Seen: map[string]time.Time{"db": at(50), "api": {}},
		Pending: map[string]Owed{"db": {At: at(50), Keys: []string{"a", "b"}}, "api": {At: at(3)}},
		Held:    []string{HeldWindow, HeldRate}}
	s, p, h := st.Encode()
	back := DecodeState(map[string]string{ForAnnotation: s, PendingAnnotation: p, HeldAnnotation: h})
	if !equalState(st, back) {
		t.Fatalf("%q / %q / %q read back as %+v", s, p, h, back)
	}
	// After the operator restarts, the same rotations call for nothing new.
	used := map[string]Usage{"db": whole(), "api": whole()}
	rots := []Rotation{{Secret: "db", At: at(50)}}
	if plan := Decide(at(55), used, back, rots, time.Minute); plan.Changed || plan.Restart {
		t.Errorf("a re-read state changes: %+v", plan)
	}
	restarted := st.Restarted()
	s, p, h = restarted.Encode()
	if p != "" || h != "" {
		t.Errorf("after the restart the workload records pending %q, held %q; want neither", p, h)
	}
	if plan := Decide(at(1000), used, DecodeState(map[string]string{ForAnnotation: s, PendingAnnotation: p}), rots, time.Minute); plan.Restart || plan.Changed {
		t.Errorf("a restart recorded is made again after a restart of the operator: %+v", plan)
	}
}

// TestHeldGoesWithTheOwedRestart: the reasons of a hold told are kept
// while the restart is owed, rotations that add to it included, and
// dropped once nothing is owed.
func TestHeldGoesWithTheOwedRestart(t *testing.T) {
	used := map[string]Usage{"db": whole()}
	held := DecodeState(map[string]string{ForAnnotation: "db=2026-11-23T11:00:50Z",
		PendingAnnotation: "db=2026-11-23T11:00:50Z/*", HeldAnnotation: "RolloutInProgress,MaintenanceWindow"})
	if want := []string{HeldWindow, HeldRollout}; !slices.Equal(held.Held, want) {
		t.Fatalf("held reads as %v, want %v", held.Held, want)
	}
	plan := Decide(at(200), used, held, []Rotation{{Secret: "db", At: at(50)}}, time.Second)
	if !plan.Restart || plan.Changed || !slices.Equal(plan.Next.Held, held.Held) {
		t.Errorf("still owed: %+v, want the hold kept unchanged", plan)
	}
	plan = Decide(at(200), used, held, []Rotation{{Secret: "db", At: at(190)}}, time.Minute)
	if plan.Restart || !slices.Equal(plan.Next.Held, held.Held) {
		t.Errorf("a rotation adds to the owed restart: %+v, want the hold kept", plan)
	}
	gone := Decide(at(200), map[string]Usage{"other": whole()}, held, nil, time.Second)
	if _, _, h := gone.Next.Encode(); h != "" || !gone.Changed {
		t.Errorf("nothing owed any more: held %q, changed %v; want the hold dropped", h, gone.Changed)
	}
	// A record of a hold without an owed restart means nothing.
	if st := DecodeState(map[string]string{ForAnnotation: "db=", HeldAnnotation: "RateLimited"}); st.Held != nil {
		t.Errorf("held %v without an owed restart", st.Held)
	}
}

func TestDecodeStateRefusesWhatItCannotRead(t *testing.T) {
	for _, ann := range []map[string]string{
		{},
		{ForAnnotation: "db"},
		{ForAnnotation: "db=yesterday"},
		{ForAnnotation: "db=", PendingAnnotation: "db=2026-11-23T11:00:50Z"},
		{ForAnnotation: "db=", PendingAnnotation: "db=/*"},
	} {
		if st := DecodeState(ann); st.Seen != nil {
			t.Errorf("DecodeState(%v) = %+v, want a workload never seen", ann, st)
		}
	}
	if st := DecodeState(map[string]string{ForAnnotation: ""}); st.Seen == nil {
		t.Error("an empty record is a workload seen that consumes nothing")
	}
}

func TestMergeBoundsKeys(t *testing.T) {
	var many []string
	for i := range maxPendingKeys + 1 {
		many = append(many, string(rune('a'+i%26))+strings.Repeat("x", i/26))
	}
	if o := merge(Owed{}, at(1), many); o.Keys != nil || !o.At.Equal(at(1)) {
		t.Errorf("merge of %d keys = %+v, want any key", len(many), o)
	}
	if o := merge(Owed{At: at(1)}, at(2), []string{"a"}); o.Keys != nil {
		t.Errorf("an owed restart for any key narrowed to %v", o.Keys)
	}
	if o := merge(Owed{At: at(5), Keys: []string{"b"}}, at(2), []string{"a"}); !slices.Equal(o.Keys, []string{"a", "b"}) || !o.At.Equal(at(5)) {
		t.Errorf("merge = %+v", o)
	}
}
