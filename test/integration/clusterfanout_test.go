package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/clusterfanout"
	"github.com/watchword-dev/watchword/internal/failure"
)

// fanNamespace creates a namespace of an exact name, for the tests that
// select namespaces by name or regular expression.
func fanNamespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	must(t, k8s.Create(context.Background(), ns))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	t.Cleanup(func() { assertNoLeak(t, name) })
	return name
}

// fanPrefix is a prefix of namespace names of one test alone.
func fanPrefix() string { return fmt.Sprintf("cf%d", nsSeq.Add(1)) }

// newCES creates a ClusterExternalSecret reading key "shared" of the
// ClusterSecretStore store into each namespace that targets select.
func newCES(t *testing.T, name, store string, targets v1alpha1.NamespaceTargets, opts ...esOpt) *v1alpha1.ClusterExternalSecret {
	t.Helper()
	es := &v1alpha1.ExternalSecret{Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: store, Kind: v1alpha1.ClusterSecretStoreKind}}}
	for _, o := range opts {
		o(es)
	}
	ces := &v1alpha1.ClusterExternalSecret{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClusterExternalSecretSpec{ExternalSecretSpec: es.Spec, NamespaceTargets: targets}}
	must(t, k8s.Create(context.Background(), ces))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ces) })
	return ces
}

func getCES(t *testing.T, name string) *v1alpha1.ClusterExternalSecret {
	t.Helper()
	var ces v1alpha1.ClusterExternalSecret
	must(t, k8s.Get(context.Background(), client.ObjectKey{Name: name}, &ces))
	return &ces
}

func updateCES(t *testing.T, name string, change func(*v1alpha1.ClusterExternalSecret)) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		ces := getCES(t, name)
		change(ces)
		if err := k8s.Update(context.Background(), ces); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// describeFanOut is a status in one line, for failure messages.
func describeFanOut(st v1alpha1.FanOutStatus) string {
	return fmt.Sprintf("conditions %+v, provisioned %v, failed %+v", st.Conditions, st.ProvisionedNamespaces, st.FailedNamespaces)
}

// waitFanOut waits until the status of a ClusterExternalSecret is
// current, lists want as provisioned, and has Ready of reason.
func waitFanOut(t *testing.T, name string, reason failure.Reason, want ...string) *v1alpha1.ClusterExternalSecret {
	t.Helper()
	slices.Sort(want)
	var ces *v1alpha1.ClusterExternalSecret
	eventually(t, wait, func() (bool, string) {
		ces = getCES(t, name)
		c := findCondition(ces.Status.Conditions, v1alpha1.ConditionReady)
		ok := c != nil && c.Reason == string(reason) && c.ObservedGeneration == ces.Generation &&
			slices.Equal(ces.Status.ProvisionedNamespaces, want)
		return ok, describeFanOut(ces.Status)
	})
	return ces
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func TestClusterExternalSecretSelectsByLabelNameAndRegex(t *testing.T) {
	parallel(t)
	p := fanPrefix()
	label := map[string]string{"fanout": p}
	byLabel := fanNamespace(t, p+"-labelled", label)
	byName := fanNamespace(t, p+"-named", nil)
	byRegex := fanNamespace(t, p+"-team-x", nil)
	other := fanNamespace(t, p+"-other", nil)
	store := p + "-store"
	clusterFakeStore(t, store, nil, nil)
	ces := newCES(t, p, store, v1alpha1.NamespaceTargets{
		NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: label}},
		Namespaces:         []string{byName},
		NamespaceRegexes:   []string{p + `-team-[a-z]+`},
	}, withData("v", "shared", ""))
	waitFanOut(t, p, failure.Provisioned, byLabel, byName, byRegex)
	for _, ns := range []string{byLabel, byName, byRegex} {
		waitSecretData(t, ns, p, map[string]string{"v": "cluster-value"})
		es := getES(t, ns, p)
		if owner := metav1.GetControllerOf(es); owner == nil || owner.UID != ces.UID || owner.Kind != "ClusterExternalSecret" {
			t.Errorf("ExternalSecret in %s has controller %+v, want the ClusterExternalSecret", ns, owner)
		}
		if es.Labels[clusterfanout.StampedByLabel] != p || es.Annotations[clusterfanout.StampedByAnnotation] != "ClusterExternalSecret/"+p {
			t.Errorf("ExternalSecret in %s lacks the label and annotation naming its owner: %v %v", ns, es.Labels, es.Annotations)
		}
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: other, Name: p}, &v1alpha1.ExternalSecret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a namespace that matches nothing got an ExternalSecret (%v)", err)
	}

	t.Log("a namespace created later is picked up")
	later := fanNamespace(t, p+"-later", label)
	waitFanOut(t, p, failure.Provisioned, byLabel, byName, byRegex, later)
	waitSecretData(t, later, p, map[string]string{"v": "cluster-value"})

	t.Log("a spec change reaches every stamped ExternalSecret")
	updateCES(t, p, func(c *v1alpha1.ClusterExternalSecret) {
		c.Spec.ExternalSecretSpec.Data = append(c.Spec.ExternalSecretSpec.Data,
			v1alpha1.ExternalSecretData{SecretKey: "again", RemoteRef: v1alpha1.RemoteReference{Key: "shared"}})
		c.Spec.ExternalSecretMetadata.Labels = map[string]string{"team": "platform"}
	})
	for _, ns := range []string{byLabel, byName, byRegex, later} {
		waitSecretData(t, ns, p, map[string]string{"v": "cluster-value", "again": "cluster-value"})
		if es := getES(t, ns, p); es.Labels["team"] != "platform" {
			t.Errorf("ExternalSecret in %s has labels %v, want team=platform", ns, es.Labels)
		}
	}
	waitFanOut(t, p, failure.Provisioned, byLabel, byName, byRegex, later)

	t.Log("a stamp edited by hand is written back")
	updateES(t, byName, p, func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = es.Spec.Data[:1]
		es.Labels["team"] = "someone-else"
	})
	eventually(t, wait, func() (bool, string) {
		es := getES(t, byName, p)
		return len(es.Spec.Data) == 2 && es.Labels["team"] == "platform", fmt.Sprintf("data %d entries, labels %v", len(es.Spec.Data), es.Labels)
	})

	t.Log("a namespace that stops matching loses its ExternalSecret and target")
	target, err := getSecret(byLabel, p)
	must(t, err)
	var nsObj corev1.Namespace
	must(t, k8s.Get(context.Background(), client.ObjectKey{Name: byLabel}, &nsObj))
	delete(nsObj.Labels, "fanout")
	must(t, k8s.Update(context.Background(), &nsObj))
	waitFanOut(t, p, failure.Provisioned, byName, byRegex, later)
	waitGone(t, &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: byLabel, Name: p}})
	waitGone(t, target)
	waitSecretData(t, byName, p, map[string]string{"v": "cluster-value", "again": "cluster-value"})

	t.Log("deleting the ClusterExternalSecret removes what it stamped")
	must(t, k8s.Delete(context.Background(), ces))
	for _, ns := range []string{byName, byRegex, later} {
		waitGone(t, &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p}})
	}
}

func TestClusterExternalSecretLeavesOthersAloneAndReportsFailedNamespaces(t *testing.T) {
	parallel(t)
	p := fanPrefix()
	label := map[string]string{"fanout": p}
	served := fanNamespace(t, p+"-served", label)
	foreign := fanNamespace(t, p+"-foreign", label)
	denied := fanNamespace(t, p+"-denied", label)
	store := p + "-store"
	clusterFakeStore(t, store, []string{served, foreign}, nil)

	// An ExternalSecret of the same name that someone else owns.
	fakeStore(t, foreign, "own", fakeEntry{key: "mine", value: "theirs"})
	newES(t, foreign, p, "own", withData("k", "mine", ""))
	waitSecretData(t, foreign, p, map[string]string{"k": "theirs"})
	before := getES(t, foreign, p)

	newCES(t, p, store, v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: label}}},
		withData("v", "shared", ""))
	ces := waitFanOut(t, p, failure.NamespacesFailed, served, denied)
	waitSecretData(t, served, p, map[string]string{"v": "cluster-value"})
	waitCondition(t, denied, p, string(failure.NamespaceDenied))
	eventually(t, wait, func() (bool, string) {
		ces = getCES(t, p)
		st := ces.Status
		if len(st.FailedNamespaces) != 2 {
			return false, describeFanOut(st)
		}
		d, f := st.FailedNamespaces[0], st.FailedNamespaces[1] // sorted: -denied, -foreign
		return d.Namespace == denied && strings.Contains(d.Reason, string(failure.NamespaceDenied)) &&
			f.Namespace == foreign && strings.Contains(f.Reason, "not owned by ClusterExternalSecret"), describeFanOut(st)
	})
	c := findCondition(ces.Status.Conditions, v1alpha1.ConditionReady)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "2 of 3 selected namespaces") {
		t.Errorf("Ready = %+v, want False naming 2 of 3 namespaces", c)
	}
	consistently(t, 2*time.Second, func() (bool, string) {
		es := getES(t, foreign, p)
		return es.Generation == before.Generation && metav1.GetControllerOf(es) == nil && es.Spec.SecretStoreRef.Name == "own" &&
			es.Annotations[clusterfanout.StampedByAnnotation] == "", "the foreign ExternalSecret was written"
	})
	waitSecretData(t, foreign, p, map[string]string{"k": "theirs"})
}

func TestClusterExternalSecretBadSelectors(t *testing.T) {
	parallel(t)
	p := fanPrefix()
	label := map[string]string{"fanout": p}
	ns := fanNamespace(t, p+"-a", label)
	store := p + "-store"
	clusterFakeStore(t, store, nil, nil)

	bad := &v1alpha1.ClusterExternalSecret{ObjectMeta: metav1.ObjectMeta{Name: p + "-regex"},
		Spec: v1alpha1.ClusterExternalSecretSpec{
			ExternalSecretSpec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: store, Kind: v1alpha1.ClusterSecretStoreKind},
				Data: []v1alpha1.ExternalSecretData{{SecretKey: "v", RemoteRef: v1alpha1.RemoteReference{Key: "shared"}}}},
			NamespaceTargets: v1alpha1.NamespaceTargets{NamespaceRegexes: []string{"team-("}}}}
	err := k8s.Create(context.Background(), bad)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must be a valid RE2 regular expression") {
		t.Fatalf("creating a ClusterExternalSecret with an invalid regex: %v, want it refused", err)
	}
	bad.Name, bad.Spec.NamespaceRegexes = p+"-none", nil
	if err := k8s.Create(context.Background(), bad); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "select namespaces with at least one") {
		t.Fatalf("creating a ClusterExternalSecret that selects nothing: %v, want it refused", err)
	}

	newCES(t, p, store, v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: label}}}, withData("v", "shared", ""))
	waitFanOut(t, p, failure.Provisioned, ns)
	waitSecretData(t, ns, p, map[string]string{"v": "cluster-value"})

	t.Log("a selector the API server cannot check stalls the object and removes nothing")
	updateCES(t, p, func(c *v1alpha1.ClusterExternalSecret) {
		c.Spec.NamespaceSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "fanout", Operator: "Near"}}}}
	})
	eventually(t, wait, func() (bool, string) {
		ces := getCES(t, p)
		c := findCondition(ces.Status.Conditions, v1alpha1.ConditionStalled)
		return c != nil && c.Reason == string(failure.InvalidNamespaceSelector) && strings.Contains(c.Message, "spec.namespaceSelectors[0]"), describeFanOut(ces.Status)
	})
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, p)
		return err == nil && string(s.Data["v"]) == "cluster-value" && getES(t, ns, p).DeletionTimestamp.IsZero(), "the synced ExternalSecret or its target went"
	})
}

// TestClusterExternalSecretReadsEachKeyOncePerRefreshWindow: a
// ClusterExternalSecret stamped into 20 namespaces reads each key of its
// store about once per refresh window, and its stamps are not written
// again while nothing changes.
//
// Serial: counts the API server's updates of ExternalSecrets across the whole cluster (apiserver_request_total).
func TestClusterExternalSecretReadsEachKeyOncePerRefreshWindow(t *testing.T) {
	const namespaces, keys, window = 20, 3, 3 * time.Second
	p := fanPrefix()
	label := map[string]string{"fanout": p}
	var all []string
	for i := range namespaces {
		all = append(all, fanNamespace(t, fmt.Sprintf("%s-%02d", p, i), label))
	}
	store := p + "-store"
	css := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: store},
		Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}}
	var opts []esOpt
	want := map[string]string{}
	for k := range keys {
		key := fmt.Sprintf("key%d", k)
		css.Spec.Fake.Data = append(css.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: key, Value: "value-" + key})
		opts = append(opts, withData(key, key, ""))
		want[key] = "value-" + key
	}
	must(t, k8s.Create(context.Background(), css))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), css) })
	opts = append(opts, withRefresh(window))
	newCES(t, p, store, v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: label}}}, opts...)
	waitFanOut(t, p, failure.Provisioned, all...)
	for _, ns := range all {
		waitSecretData(t, ns, p, want)
	}
	first := readCount(store)
	// Every ExternalSecret asks for every key: 60 reads without sharing.
	if first > 2*keys {
		t.Errorf("the first sync of %d namespaces × %d keys made %d store reads, want about %d", namespaces, keys, first, keys)
	}
	// Three more refresh windows: every ExternalSecret refreshes in each.
	putsBefore := externalSecretPuts(t)
	t.Logf("updates of ExternalSecrets so far: %v", putsBefore)
	time.Sleep(3 * window)
	cycles := readCount(store) - first
	if puts := externalSecretPuts(t) - putsBefore; puts != 0 {
		t.Errorf("%v updates of ExternalSecrets over 3 refresh windows with nothing changed, want 0: a stamp is written again and again", puts)
	}
	t.Logf("%d namespaces × %d keys: %d reads at the first sync, %d over 3 refresh windows of %s", namespaces, keys, first, cycles, window)
	if cycles < keys || cycles > 3*2*keys {
		t.Errorf("3 refresh windows made %d store reads, want about %d (one per key per window; %d without sharing)", cycles, 3*keys, 3*namespaces*keys)
	}
	// The stamps were written once: their refreshes and status changes,
	// each of which queues the ClusterExternalSecret, rewrote no spec.
	for _, ns := range all {
		if es := getES(t, ns, p); es.Generation != 1 {
			t.Errorf("the ExternalSecret in %s is at generation %d, want 1", ns, es.Generation)
		}
	}
}

func TestClusterPushSecretStampsPushSecrets(t *testing.T) {
	parallel(t)
	p := fanPrefix()
	label := map[string]string{"fanout": p}
	var sources, remotes []string
	for i := range 2 {
		ns := fanNamespace(t, fmt.Sprintf("%s-%d", p, i), label)
		remote := newNamespace(t, nil)
		publisherStore(t, ns, "publisher", remote)
		createSecret(t, ns, "app-creds", map[string]string{"password": "pw-" + ns})
		sources, remotes = append(sources, ns), append(remotes, remote)
	}
	cps := &v1alpha1.ClusterPushSecret{ObjectMeta: metav1.ObjectMeta{Name: p},
		Spec: v1alpha1.ClusterPushSecretSpec{
			PushSecretSpec: v1alpha1.PushSecretSpec{SecretName: "app-creds",
				Data:         []v1alpha1.PushSecretData{{SecretKey: "password"}},
				Destinations: []v1alpha1.PushSecretDestination{{Name: "published", ConfigRef: &v1alpha1.StoreRef{Kind: v1alpha1.SecretStoreKind, Name: "publisher"}}}},
			NamespaceTargets: v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: label}}}}}
	must(t, k8s.Create(context.Background(), cps))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cps) })
	for i, ns := range sources {
		eventually(t, wait, func() (bool, string) {
			s, err := getSecret(remotes[i], "published")
			if err != nil {
				return false, err.Error()
			}
			return string(s.Data["password"]) == "pw-"+ns, "published value differs"
		})
		var ps v1alpha1.PushSecret
		must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: p}, &ps))
		if owner := metav1.GetControllerOf(&ps); owner == nil || owner.UID != cps.UID || owner.Kind != "ClusterPushSecret" {
			t.Errorf("PushSecret in %s has controller %+v, want the ClusterPushSecret", ns, owner)
		}
	}
	eventually(t, wait, func() (bool, string) {
		var got v1alpha1.ClusterPushSecret
		must(t, k8s.Get(context.Background(), client.ObjectKey{Name: p}, &got))
		c := findCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Reason == string(failure.Provisioned) && slices.Equal(got.Status.ProvisionedNamespaces, sources), describeFanOut(got.Status)
	})

	t.Log("a namespace that stops matching loses its PushSecret")
	var nsObj corev1.Namespace
	must(t, k8s.Get(context.Background(), client.ObjectKey{Name: sources[0]}, &nsObj))
	nsObj.Labels = nil
	must(t, k8s.Update(context.Background(), &nsObj))
	waitGone(t, &v1alpha1.PushSecret{ObjectMeta: metav1.ObjectMeta{Namespace: sources[0], Name: p}})
}

// embeds maps a cluster kind to the kind whose spec it embeds: the rules
// of that spec are tested on that kind (ruleCases).
var embeds = map[string]string{"ClusterExternalSecret": kindES, "ClusterPushSecret": kindPS}

// The rules of the cluster kinds' own fields.
func init() {
	const es = `externalSecretSpec: {secretStoreRef: {name: s}, data: [{secretKey: k, remoteRef: {key: k}}]}`
	const ps = `pushSecretSpec: {secretName: s, destinations: [{name: d}]}`
	kinds := []string{"ClusterExternalSecret", "ClusterPushSecret"}
	for i, kind := range kinds {
		spec := []string{es, ps}[i]
		many := numbered("{key: k%d, operator: Exists}", 17)
		ruleCases = append(ruleCases,
			ruleCase{rule: "select namespaces with at least one of namespaceSelectors, namespaces or namespaceRegexes", kinds: []string{kind},
				valid:   `{` + spec + `, namespaces: [a]}`,
				invalid: []string{`{` + spec + `}`, `{` + spec + `, namespaces: [], namespaceSelectors: []}`}},
			ruleCase{rule: "each of namespaceSelectors may hold at most 64 matchLabels and 16 matchExpressions", kinds: []string{kind},
				valid:   `{` + spec + `, namespaceSelectors: [{}, {matchLabels: {team: a}}]}`,
				invalid: []string{`{` + spec + `, namespaceSelectors: [{matchExpressions: [` + many + `]}]}`}},
			ruleCase{rule: "every entry of namespaceRegexes must be a valid RE2 regular expression", kinds: []string{kind},
				valid:   `{` + spec + `, namespaceRegexes: ["team-.*", "^(a|b)$"]}`,
				invalid: []string{`{` + spec + `, namespaceRegexes: ["team-("]}`, `{` + spec + `, namespaceRegexes: [ok, "a[z"]}`}},
			ruleCase{rule: "refreshTime must be a Go duration", kinds: []string{kind},
				valid:   `{` + spec + `, namespaces: [a], refreshTime: 5m}`,
				invalid: []string{`{` + spec + `, namespaces: [a], refreshTime: "0"}`, `{` + spec + `, namespaces: [a], refreshTime: hourly}`}},
		)
	}
}

// externalSecretPuts is the API server's count of updates of
// ExternalSecrets (not of their status), from its metrics.
func externalSecretPuts(t *testing.T) float64 {
	t.Helper()
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	must(t, err)
	var n float64
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="externalsecrets"`) ||
			!strings.Contains(line, `verb="PUT"`) || !strings.Contains(line, `subresource=""`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
			n += v
		}
	}
	return n
}

// stampedTargetRule is the message of the ClusterExternalSecret's
// transition rule on the stamped target name (TestClusterExternalSecretTargetNameMovesOnlyWithTheStampName).
const stampedTargetRule = "the stamped target name is immutable"

// TestClusterExternalSecretTargetNameMovesOnlyWithTheStampName: the
// stamped ExternalSecrets' target name is immutable, so a
// ClusterExternalSecret may change externalSecretSpec.target.name only
// together with externalSecretName; the API server says so at the edit,
// rather than every stamp failing its update later.
func TestClusterExternalSecretTargetNameMovesOnlyWithTheStampName(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	name := "ces-rule-" + newNamespace(t, nil)
	u := objectWithSpec(t, "ClusterExternalSecret", "", `{namespaces: [nowhere], externalSecretSpec: {secretStoreRef: {name: s}, data: [{secretKey: k, remoteRef: {key: k}}]}}`)
	u.SetName(name)
	must(t, k8s.Create(ctx, u))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
	update := func(change func(spec map[string]any)) error {
		// The controller writes the status meanwhile: a conflict is tried
		// again on the new version.
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(u.GroupVersionKind())
			must(t, k8s.Get(ctx, client.ObjectKey{Name: name}, cur))
			change(cur.Object["spec"].(map[string]any))
			return k8s.Update(ctx, cur)
		})
	}
	setTarget := func(spec map[string]any, target string) {
		spec["externalSecretSpec"].(map[string]any)["target"] = map[string]any{"name": target}
	}
	if err := update(func(spec map[string]any) { setTarget(spec, name) }); err != nil {
		t.Errorf("stating the target name in effect was refused: %v", err)
	}
	err := update(func(spec map[string]any) { setTarget(spec, "elsewhere") })
	if err == nil || !strings.Contains(err.Error(), stampedTargetRule) {
		t.Errorf("a new target name under the same stamp name: %v, want the rule's refusal", err)
	}
	if err := update(func(spec map[string]any) {
		setTarget(spec, "elsewhere")
		spec["externalSecretName"] = "app-v2"
	}); err != nil {
		t.Errorf("a new target name with a new stamp name was refused: %v", err)
	}
}

// TestClusterExternalSecretRenameKeepsTheOldStampUntilTheNewOneIsIn: a
// new externalSecretName is stamped beside the old one, and the old stamp
// (with its target) goes only where the new one is in place; where an
// ExternalSecret of the new name belongs to someone else, the old stamp
// stays and keeps its target synced.
func TestClusterExternalSecretRenameKeepsTheOldStampUntilTheNewOneIsIn(t *testing.T) {
	parallel(t)
	p := fanPrefix()
	label := map[string]string{"fanout": p}
	free := fanNamespace(t, p+"-free", label)
	taken := fanNamespace(t, p+"-taken", label)
	store := p + "-store"
	clusterFakeStore(t, store, nil, nil)
	newCES(t, p, store, v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: label}}},
		withData("v", "shared", ""))
	waitFanOut(t, p, failure.Provisioned, free, taken)
	waitSecretData(t, taken, p, map[string]string{"v": "cluster-value"})

	// Someone else's ExternalSecret holds the new name in one namespace.
	fakeStore(t, taken, "own", fakeEntry{key: "mine", value: "theirs"})
	newES(t, taken, p+"-v2", "own", withData("k", "mine", ""))
	updateCES(t, p, func(ces *v1alpha1.ClusterExternalSecret) { ces.Spec.ExternalSecretName = p + "-v2" })

	waitSecretData(t, free, p+"-v2", map[string]string{"v": "cluster-value"})
	eventually(t, wait, func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: free, Name: p}, &v1alpha1.ExternalSecret{})
		return apierrors.IsNotFound(err), fmt.Sprintf("the old stamp in %s: %v", free, err)
	})
	consistently(t, 3*time.Second, func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: taken, Name: p}, &v1alpha1.ExternalSecret{})
		return err == nil, fmt.Sprintf("the old stamp in %s, whose new name another holds: %v", taken, err)
	})
	waitSecretData(t, taken, p, map[string]string{"v": "cluster-value"})
	waitSecretData(t, taken, p+"-v2", map[string]string{"k": "theirs"})
}
