package integration

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/controller/restart"
)

const gettingStarted = "../../docs/getting-started.md"

// optIn is what a `kubectl label` or `kubectl annotate` of a Deployment
// in the docs sets.
type optIn struct {
	deployment          string
	labels, annotations map[string]string
}

// gettingStartedRotation reads section 5 of docs/getting-started.md: the
// Deployments its ```yaml blocks create, and what its `kubectl label` and
// `kubectl annotate` commands set on Deployments.
func gettingStartedRotation(t *testing.T) ([]*unstructured.Unstructured, map[string]*optIn) {
	t.Helper()
	raw, err := os.ReadFile(gettingStarted)
	must(t, err)
	from, to := 0, 0
	for i, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "## 5. "):
			from = i + 1
		case from > 0 && to == 0 && strings.HasPrefix(line, "## "):
			to = i + 1
		}
	}
	if from == 0 || to == 0 {
		t.Fatalf("%s has no section 5 followed by another", gettingStarted)
	}
	blocks, err := docBlocks(gettingStarted)
	must(t, err)
	var deployments []*unstructured.Unstructured
	cmds := map[string]*optIn{}
	for _, b := range blocks {
		if b.line < from || b.line > to {
			continue
		}
		switch b.info {
		case infoObjects:
			objs, err := docObjects(b.body)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			for _, o := range objs {
				if o.GetKind() == "Deployment" {
					deployments = append(deployments, o)
				}
			}
		case "sh":
			for _, line := range strings.Split(b.body, "\n") {
				kubectlOptIn(line, cmds)
			}
		}
	}
	return deployments, cmds
}

// kubectlOptIn reads `kubectl [-n NS] label|annotate deployment NAME
// K=V...` into cmds; other lines are left alone.
func kubectlOptIn(line string, cmds map[string]*optIn) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "kubectl" {
		return
	}
	var args []string
	for i := 1; i < len(f); i++ {
		if f[i] == "-n" || f[i] == "--namespace" {
			i++
			continue
		}
		args = append(args, f[i])
	}
	if len(args) < 3 || (args[0] != "label" && args[0] != "annotate") || (args[1] != "deployment" && args[1] != "deploy") {
		return
	}
	c := cmds[args[2]]
	if c == nil {
		c = &optIn{deployment: args[2], labels: map[string]string{}, annotations: map[string]string{}}
		cmds[args[2]] = c
	}
	for _, kv := range args[3:] {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if args[0] == "label" {
				c.labels[k] = v
			} else {
				c.annotations[k] = v
			}
		}
	}
}

// TestRestartAsGettingStartedSays: section 5 of docs/getting-started.md,
// followed as written, restarts the Deployments it has the reader opt
// in, both the one it has them create and the one they already had and
// label and annotate with kubectl, once, for the rotation of app-db.
// The namespace and the store are the test's: app-db reads its password
// from the test's store, as section 4 has it read from its own.
func TestRestartAsGettingStartedSays(t *testing.T) {
	parallel(t)
	deployments, cmds := gettingStartedRotation(t)
	if len(deployments) == 0 && len(cmds) == 0 {
		t.Fatalf("section 5 of %s has the reader opt no Deployment in", gettingStarted)
	}
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"password": "first-password"})
	newES(t, ns, "app-db", "remote", withRefresh(time.Second), withData("password", "upstream", "password"))
	waitSecretData(t, ns, "app-db", map[string]string{"password": "first-password"})

	var names []string
	for _, d := range deployments {
		d.SetNamespace(ns)
		must(t, k8s.Create(context.Background(), d))
		names = append(names, d.GetName())
	}
	for name, c := range cmds {
		// A Deployment the reader already had, reading the password.
		newDeployment(t, ns, name, nil, nil, envKey("app-db", "password"))
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": c.labels, "annotations": c.annotations}})
		must(t, err)
		must(t, k8s.Patch(context.Background(), getDeployment(t, ns, name), client.RawPatch(types.MergePatchType, patch)))
		names = append(names, name)
	}
	for _, name := range names {
		waitRecorded(t, ns, name, "app-db")
	}

	rotate(t, src, "password", "second-password")
	waitSecretData(t, ns, "app-db", map[string]string{"password": "second-password"})
	for _, name := range names {
		// After the default debounce of 30 s.
		deps.waitRestarts(t, name, 1, restart.DefaultDebounce+2*wait)
		waitEvent(t, ns, name, restart.ReasonRestarted, `rotation of Secret "app-db"`)
	}
	for _, name := range names {
		deps.keepRestarts(t, ns, name, 1)
	}
}
