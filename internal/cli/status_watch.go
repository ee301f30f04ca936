package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// rowKey names one row of the table.
type rowKey struct{ kind, namespace, name string }

func keyOf(r StatusRow) rowKey { return rowKey{r.Kind, r.Namespace, r.Name} }

// sameState tells whether two rows show the same state: phase, Ready,
// reason and message. The time of the last sync is left out: it moves
// with every refresh, which is no news.
func sameState(a, b StatusRow) bool {
	return a.Phase == b.Phase && a.Ready == b.Ready && a.Reason == b.Reason && a.Message == b.Message
}

// WatchStatus prints the table of Status, then follows the ExternalSecrets
// and PushSecrets of ns (every namespace when ns is empty) through watches
// of the API server: each time one appears, goes, or changes what the
// table shows of it (phase, Ready, reason or message), it prints one line
// for that one alone, with the time, instead of the whole table again. A
// watch that the API server ends (as it does every few minutes) is
// started again from a new list, whose differences are printed the same
// way. It runs until ctx ends and returns the rows as they are then,
// sorted as Status sorts them.
func WatchStatus(ctx context.Context, c client.WithWatch, ns string, now func() time.Time, out io.Writer) ([]StatusRow, error) {
	rows, versions, err := listStatus(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	if err = PrintStatus(out, rows, now()); err != nil {
		return nil, err
	}
	shown := map[rowKey]StatusRow{}
	for _, r := range rows {
		shown[keyOf(r)] = r
	}
	for {
		if err = follow(ctx, c, ns, versions, shown, now, out); err != nil && ctx.Err() == nil {
			return current(shown), err
		}
		select {
		case <-ctx.Done():
			return current(shown), nil
		case <-time.After(time.Second):
		}
		if rows, versions, err = listStatus(ctx, c, ns); err != nil {
			if ctx.Err() != nil {
				return current(shown), nil
			}
			return current(shown), err
		}
		listed := map[rowKey]bool{}
		for _, r := range rows {
			listed[keyOf(r)] = true
			show(shown, r, now, out)
		}
		for k := range shown {
			if !listed[k] {
				gone(shown, k, now, out)
			}
		}
	}
}

// follow watches both kinds from the lists' resourceVersions and prints
// what changes, until ctx ends or a watch ends.
func follow(ctx context.Context, c client.WithWatch, ns string, versions [2]string, shown map[rowKey]StatusRow, now func() time.Time, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := func(rv string) *client.ListOptions {
		return &client.ListOptions{Namespace: ns, Raw: &metav1.ListOptions{ResourceVersion: rv}}
	}
	esw, err := c.Watch(ctx, &v1alpha1.ExternalSecretList{}, opts(versions[0]))
	if err != nil {
		return fmt.Errorf("watching ExternalSecrets: %w", err)
	}
	defer esw.Stop()
	psw, err := c.Watch(ctx, &v1alpha1.PushSecretList{}, opts(versions[1]))
	if err != nil {
		return fmt.Errorf("watching PushSecrets: %w", err)
	}
	defer psw.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case ev, ok = <-esw.ResultChan():
		case ev, ok = <-psw.ResultChan():
		}
		if !ok || ev.Type == watch.Error {
			// Expired or ended: the caller lists again.
			return nil
		}
		var row StatusRow
		switch o := ev.Object.(type) {
		case *v1alpha1.ExternalSecret:
			row = externalSecretRow(o)
		case *v1alpha1.PushSecret:
			row = pushSecretRow(o)
		default:
			continue
		}
		if ev.Type == watch.Deleted {
			gone(shown, keyOf(row), now, out)
			continue
		}
		show(shown, row, now, out)
	}
}

// show prints the row when it is new or its state changed.
func show(shown map[rowKey]StatusRow, r StatusRow, now func() time.Time, out io.Writer) {
	k := keyOf(r)
	if old, ok := shown[k]; ok && sameState(old, r) {
		shown[k] = r
		return
	}
	shown[k] = r
	msg := ""
	if r.Failing() {
		msg = r.Message
		if msg == "" {
			msg = "not reconciled yet"
		}
	}
	phase, reason := r.Phase, r.Reason
	if phase == "" {
		phase = "-"
	}
	if reason == "" {
		reason = "-"
	}
	fmt.Fprintf(out, "%s  %s %s/%s  %s  Ready=%s  %s  %s\n", now().Format("15:04:05"), r.Kind, r.Namespace, r.Name,
		phase, r.Ready, reason, oneLine(msg))
}

// gone prints that a row's object was deleted.
func gone(shown map[rowKey]StatusRow, k rowKey, now func() time.Time, out io.Writer) {
	if _, ok := shown[k]; !ok {
		return
	}
	delete(shown, k)
	fmt.Fprintf(out, "%s  %s %s/%s  deleted\n", now().Format("15:04:05"), k.kind, k.namespace, k.name)
}

func current(shown map[rowKey]StatusRow) []StatusRow {
	rows := make([]StatusRow, 0, len(shown))
	for _, r := range shown {
		rows = append(rows, r)
	}
	sortRows(rows)
	return rows
}
