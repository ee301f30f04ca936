package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// StatusRow is one ExternalSecret or PushSecret as `watchword status`
// shows it.
type StatusRow struct {
	Kind, Namespace, Name string
	Phase                 string
	// Ready is "True", "False" or "Unknown" (no condition yet, or not for
	// the current generation).
	Ready, Reason, Message string
	// LastSync is when the data was last synced or published; zero when
	// never.
	LastSync time.Time
}

// Failing tells whether the row is not Ready.
func (r StatusRow) Failing() bool { return r.Ready != string(metav1.ConditionTrue) }

// Status lists the ExternalSecrets and PushSecrets of namespace ns (every
// namespace when ns is empty), sorted by namespace, kind and name.
func Status(ctx context.Context, c client.Reader, ns string) ([]StatusRow, error) {
	rows, _, err := listStatus(ctx, c, ns)
	return rows, err
}

// listStatus is Status, and the resourceVersions of the two lists, from
// which a watch carries on.
func listStatus(ctx context.Context, c client.Reader, ns string) (rows []StatusRow, versions [2]string, err error) {
	var ess v1alpha1.ExternalSecretList
	if err := c.List(ctx, &ess, client.InNamespace(ns)); err != nil {
		return nil, versions, fmt.Errorf("listing ExternalSecrets: %w", err)
	}
	for i := range ess.Items {
		rows = append(rows, externalSecretRow(&ess.Items[i]))
	}
	var pss v1alpha1.PushSecretList
	if err := c.List(ctx, &pss, client.InNamespace(ns)); err != nil {
		return nil, versions, fmt.Errorf("listing PushSecrets: %w", err)
	}
	for i := range pss.Items {
		rows = append(rows, pushSecretRow(&pss.Items[i]))
	}
	sortRows(rows)
	return rows, [2]string{ess.ResourceVersion, pss.ResourceVersion}, nil
}

// sortRows sorts by namespace, kind and name.
func sortRows(rows []StatusRow) {
	slices.SortFunc(rows, func(a, b StatusRow) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
}

func externalSecretRow(es *v1alpha1.ExternalSecret) StatusRow {
	row := StatusRow{Kind: "ExternalSecret", Namespace: es.Namespace, Name: es.Name, Phase: string(es.Status.Phase), Ready: "Unknown"}
	for _, cond := range es.Status.Conditions {
		if cond.Type == v1alpha1.ConditionReady && cond.ObservedGeneration == es.Generation {
			row.Ready, row.Reason, row.Message = string(cond.Status), cond.Reason, cond.Message
		}
	}
	if es.Status.RefreshTime != nil {
		row.LastSync = es.Status.RefreshTime.Time
	}
	return row
}

func pushSecretRow(ps *v1alpha1.PushSecret) StatusRow {
	row := StatusRow{Kind: "PushSecret", Namespace: ps.Namespace, Name: ps.Name, Ready: "Unknown"}
	if cond := meta.FindStatusCondition(ps.Status.Conditions, v1alpha1.ConditionReady); cond != nil && cond.ObservedGeneration == ps.Generation {
		row.Ready, row.Reason, row.Message = string(cond.Status), cond.Reason, cond.Message
	}
	row.Phase = "Publishing"
	if row.Failing() {
		row.Phase = "Failing"
	}
	for _, d := range ps.Status.Destinations {
		if d.PublishedTime != nil && d.PublishedTime.After(row.LastSync) {
			row.LastSync = d.PublishedTime.Time
		}
	}
	return row
}

// PrintStatus writes rows as a table; now makes the ages.
func PrintStatus(out io.Writer, rows []StatusRow, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tKIND\tNAME\tPHASE\tREADY\tREASON\tLAST SYNC\tMESSAGE")
	for _, r := range rows {
		last := "never"
		if !r.LastSync.IsZero() {
			last = now.Sub(r.LastSync).Round(time.Second).String() + " ago"
		}
		msg := r.Message
		if r.Failing() && msg == "" {
			msg = "not reconciled yet"
		}
		if !r.Failing() {
			msg = ""
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Kind, r.Name, r.Phase, r.Ready, r.Reason, last, oneLine(msg))
	}
	return w.Flush()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
